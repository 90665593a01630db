//! `subscriptions/listen` (2026-07-28): a long-lived stream of the notifications a client
//! asked for, each tagged with the listen request's id.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::Shared;
use super::front::event_notification;
use super::front::port::Frame;
use super::tasks::Tasks;
use crate::handler::events::Event;
use crate::protocol::jsonrpc::clip;
use crate::protocol::jsonrpc::{self, RequestId, RpcError};
use crate::protocol::meta::{Params, RequestMeta, SERVER_INFO, SUBSCRIPTION_ID};
use crate::protocol::tasks::{declared, missing_extension};
use crate::tasks::TaskRecord;

/// `params.notifications` of `subscriptions/listen`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    #[serde(default)]
    resource_subscriptions: Option<Uris>,
    /// The tasks extension: `notifications/tasks` for these tasks. Read apart
    /// ([`TaskIds`]), bounded while reading.
    #[serde(skip)]
    task_ids: Option<Vec<String>>,
}

/// `notifications.taskIds` as it arrived, read after the filter (and only where the server
/// has tasks): the filter's own reading skips it without keeping anything.
#[derive(Deserialize)]
struct RawTaskIds<'a> {
    #[serde(borrow, default, rename = "taskIds")]
    task_ids: Option<&'a serde_json::value::RawValue>,
}

/// Reads `taskIds` keeping at most `max` ids of at most [`MAX_TASK_ID_BYTES`] each: past
/// either bound the rest is only counted (for the error), so that a list of a million ids in a
/// 4 MiB body is never a million strings.
struct TaskIds {
    max: usize,
}

/// What [`TaskIds`] read.
enum ReadIds {
    Ids(Vec<String>),
    /// More than `max` ids: how many.
    TooMany(usize),
    /// An id longer than [`MAX_TASK_ID_BYTES`]: its length.
    TooLong(usize),
}

impl<'de> serde::de::DeserializeSeed<'de> for TaskIds {
    type Value = ReadIds;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<ReadIds, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for TaskIds {
    type Value = ReadIds;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of task ids")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ReadIds, A::Error> {
        let mut ids = Vec::new();
        let mut long = None;
        while ids.len() < self.max && long.is_none() {
            match seq.next_element::<String>()? {
                None => return Ok(ReadIds::Ids(ids)),
                Some(id) if id.len() > MAX_TASK_ID_BYTES => long = Some(id.len()),
                Some(id) => ids.push(id),
            }
        }
        let mut count = ids.len() + usize::from(long.is_some());
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            count += 1;
        }
        Ok(match long {
            _ if count > self.max => ReadIds::TooMany(count),
            Some(bytes) => ReadIds::TooLong(bytes),
            None => ReadIds::Ids(ids),
        })
    }
}

/// The longest task id a `subscriptions/listen` filter may name (sake's are 32 bytes; a
/// [`TaskStore`](crate::tasks::TaskStore) of one's own may make longer ones, up to this).
pub(crate) const MAX_TASK_ID_BYTES: usize = 256;

/// The most resource URIs one `subscriptions/listen` filter may name.
pub(crate) const MAX_LISTEN_URIS: usize = 1024;

/// A filter's resource URIs: at most [`MAX_LISTEN_URIS`], each at most
/// [`MAX_URI_BYTES`](super::MAX_URI_BYTES) — refused while reading, so a huge filter never
/// becomes a huge allocation — kept in order (for the acknowledgement) and as a set (to match
/// each update in O(1)).
#[derive(Clone, Debug, Default)]
struct Uris {
    listed: Vec<Box<str>>,
    set: std::collections::HashSet<Box<str>>,
}

impl<'de> Deserialize<'de> for Uris {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Uris;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of resource URIs")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Uris, A::Error> {
                use serde::de::Error as _;
                let mut uris = Uris::default();
                while let Some(uri) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
                    if uris.listed.len() == MAX_LISTEN_URIS {
                        return Err(A::Error::custom(format!(
                            "`resourceSubscriptions` names more than {MAX_LISTEN_URIS} resources; listen on several streams"
                        )));
                    }
                    if uri.len() > super::MAX_URI_BYTES {
                        return Err(A::Error::custom(format!(
                            "a resource URI of {} bytes; this server serves none longer than {}",
                            uri.len(),
                            super::MAX_URI_BYTES
                        )));
                    }
                    let uri: Box<str> = uri.into();
                    if uris.set.insert(uri.clone()) {
                        uris.listed.push(uri);
                    }
                }
                Ok(uris)
            }
        }
        d.deserialize_seq(Visit)
    }
}

impl Filter {
    /// The subset the server honours: only what it advertises.
    fn honoured(mut self, shared: &Shared) -> Filter {
        let caps = &shared.capabilities;
        let listed = |c: Option<bool>| c == Some(true);
        self.tools_list_changed &= listed(caps.tools.as_ref().and_then(|t| t.list_changed));
        self.prompts_list_changed &= listed(caps.prompts.as_ref().and_then(|p| p.list_changed));
        let resources = caps.resources.as_ref();
        self.resources_list_changed &= listed(resources.and_then(|r| r.list_changed));
        if !listed(resources.and_then(|r| r.subscribe)) {
            self.resource_subscriptions = None;
        }
        if shared.tasks.is_none() {
            self.task_ids = None;
        }
        self
    }

    fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        if self.tools_list_changed {
            m.insert("toolsListChanged".into(), true.into());
        }
        if self.prompts_list_changed {
            m.insert("promptsListChanged".into(), true.into());
        }
        if self.resources_list_changed {
            m.insert("resourcesListChanged".into(), true.into());
        }
        if let Some(uris) = &self.resource_subscriptions {
            m.insert("resourceSubscriptions".into(), json!(uris.listed));
        }
        if let Some(ids) = &self.task_ids {
            m.insert("taskIds".into(), json!(ids));
        }
        Value::Object(m)
    }

    fn wants(&self, event: &Event) -> bool {
        match event {
            Event::ToolsChanged => self.tools_list_changed,
            Event::PromptsChanged => self.prompts_list_changed,
            Event::ResourcesChanged => self.resources_list_changed,
            Event::ResourceUpdated(uri) => self
                .resource_subscriptions
                .as_ref()
                .is_some_and(|u| u.set.contains(&**uri)),
        }
    }
}

/// Starts a subscription: checks the filter, and returns the stream of its frames, which
/// begins with the acknowledgement.
pub(crate) fn listen(
    shared: &Arc<Shared>,
    id: RequestId,
    params: &Params<'_>,
    meta: &RequestMeta,
    extensions: &http::Extensions,
) -> Result<impl Stream<Item = Frame> + Send + 'static, RpcError> {
    let owns = shared.callers.owner_test(extensions);
    let revoked = shared.callers.watch_caller(extensions);
    let raw = params.notifications.ok_or_else(|| {
        RpcError::invalid_params("Invalid params: `subscriptions/listen` needs `notifications` (a SubscriptionFilter object)")
    })?;
    // serde would also read a struct from an array, by position: `[]` must not be a filter.
    if !raw.get().starts_with('{') {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: `notifications` must be a SubscriptionFilter object, not {}",
            clip(raw.get())
        )));
    }
    let filter: Filter = serde_json::from_str(raw.get()).map_err(|e| {
        RpcError::invalid_params(format!(
            "Invalid params: `notifications` is not a SubscriptionFilter: {}",
            crate::handler::strip_position(&e)
        ))
    })?;
    let mut filter = filter;
    if shared.tasks.is_some() {
        filter.task_ids = task_ids(shared, raw, meta)?;
    }
    let mut filter = filter.honoured(shared);
    // Only what the server serves is honoured (the acknowledgement leaves the rest out), and
    // only what the caller may read: a resource it may not read is refused with the same
    // 401 or 403 as `resources/read`, so that it can sign in with more.
    // A proxied resource is followed upstream while the stream lasts.
    let caller = shared.admission.caller_key(extensions);
    let mut following = Vec::new();
    if let Some(uris) = &mut filter.resource_subscriptions {
        let mut kept = Uris::default();
        for uri in std::mem::take(&mut uris.listed) {
            match shared.catalog.followable_uri(extensions, &uri, caller) {
                Ok(part) => {
                    // One part per URI however often the filter names it.
                    if kept.set.insert(uri.clone()) {
                        following.extend(part);
                    }
                    kept.listed.push(uri);
                }
                Err(e) if e.challenge().is_some() => return Err(e),
                Err(_) => {}
            }
        }
        *uris = kept;
    }
    // What the stream keeps, counted against the client's bytes until it ends.
    let bytes = filter.resource_subscriptions.as_ref().map_or(0, |u| {
        u.listed
            .iter()
            .map(|uri| uri.len() + super::front::HELD_OVERHEAD)
            .sum::<usize>()
    }) + filter.task_ids.as_ref().map_or(0, |ids| {
        ids.iter()
            .map(|id| id.len() + super::front::HELD_OVERHEAD)
            .sum::<usize>()
    });
    let held = shared
        .admission
        .hold(caller, bytes, "this stream's filter")?;
    let tasks = match (&shared.tasks, &filter.task_ids) {
        (Some(tasks), Some(ids)) => {
            let mut poll = tokio::time::interval(tasks.poll_interval);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            Some(TaskWatch {
                tasks: tasks.clone(),
                changes: tasks.subscribe(),
                owns,
                requested: ids.clone(),
                watched: HashMap::new(),
                poll,
            })
        }
        _ => None,
    };
    let events = shared.events.subscribe();
    let mut tick = tokio::time::interval(shared.config.keep_alive);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = State {
        shared: shared.clone(),
        id,
        filter,
        events,
        tick,
        acked: false,
        closed: false,
        tasks,
        outbox: VecDeque::new(),
        _held: held,
        _following: following,
        revoked,
    };
    Ok(futures_util::stream::unfold(state, next))
}

/// The filter's `taskIds`, checked: declared, at most the server's number, none longer than a
/// task id can be (a stream holds its ids while it is open).
fn task_ids(
    shared: &Shared,
    raw: &serde_json::value::RawValue,
    meta: &RequestMeta,
) -> Result<Option<Vec<String>>, RpcError> {
    let not_a_filter = |e: serde_json::Error| {
        RpcError::invalid_params(format!(
            "Invalid params: `notifications` is not a SubscriptionFilter: {}",
            crate::handler::strip_position(&e)
        ))
    };
    let Some(ids) = serde_json::from_str::<RawTaskIds<'_>>(raw.get())
        .map_err(not_a_filter)?
        .task_ids
        .filter(|ids| ids.get() != "null")
    else {
        return Ok(None);
    };
    // The tasks extension: "-32021 … if a subscriptions/listen request includes taskIds"
    // from a request that did not declare it. (A server without the extension does not know
    // the member, and leaves it out of the acknowledgement.)
    if !declared(&meta.client_capabilities) {
        return Err(missing_extension());
    }
    let max = shared.config.limits.max_subscriptions_per_session;
    let mut reader = serde_json::Deserializer::from_str(ids.get());
    let read = serde::de::DeserializeSeed::deserialize(TaskIds { max }, &mut reader)
        .map_err(not_a_filter)?;
    match read {
        ReadIds::Ids(ids) => Ok(Some(ids)),
        ReadIds::TooMany(n) => Err(RpcError::invalid_params(format!(
            "Invalid params: `notifications.taskIds` names {n} tasks; this server follows at most {max} per stream"
        ))),
        ReadIds::TooLong(bytes) => Err(RpcError::invalid_params(format!(
            "Invalid params: a task id of {bytes} bytes in `notifications.taskIds`; this server's task ids have at most {MAX_TASK_ID_BYTES}"
        ))),
    }
}

struct State {
    shared: Arc<Shared>,
    id: RequestId,
    filter: Filter,
    events: broadcast::Receiver<Event>,
    tick: tokio::time::Interval,
    acked: bool,
    closed: bool,
    tasks: Option<TaskWatch>,
    /// Frames decided and not yet sent.
    outbox: VecDeque<Bytes>,
    /// The bytes of its filter, in its client's share until the stream ends.
    _held: super::front::Held,
    /// Its proxied resources, followed upstream until the stream ends.
    _following: Vec<super::source::Following>,
    /// The caller's hold: the stream ends when the caller is signed out.
    revoked: Option<super::revocation::Watch>,
}

/// Completes when the stream's caller is signed out; never for an anonymous one.
async fn signed_out(watch: Option<&super::revocation::Watch>) {
    match watch {
        Some(w) => w.revoked().await,
        None => std::future::pending().await,
    }
}

/// The tasks a stream reports on (`notifications/tasks`).
struct TaskWatch {
    tasks: Arc<Tasks>,
    /// Tasks that changed in this process.
    changes: broadcast::Receiver<Arc<str>>,
    /// Whether a task's caller digest is this stream's caller.
    owns: super::OwnerTest,
    requested: Vec<String>,
    /// Each unfinished task followed, with the version last reported.
    watched: HashMap<String, u64>,
    /// Changes made by other replicas are read at the polling interval.
    poll: tokio::time::Interval,
}

impl TaskWatch {
    /// The tasks of the filter that exist and belong to the caller: the ones the server
    /// agrees to report on. Each one's current state is queued, so that a task that changed
    /// before the stream opened is not missed.
    async fn agree(&mut self, id: &RequestId, out: &mut VecDeque<Bytes>) -> Vec<String> {
        let mut agreed = Vec::new();
        for task in std::mem::take(&mut self.requested) {
            if agreed.contains(&task) {
                continue;
            }
            if let Ok(record) = self.tasks.find(&task, &*self.owns).await {
                out.push_back(task_notification(&record, id));
                if !record.status.is_terminal() {
                    self.watched.insert(task.clone(), record.version);
                }
                agreed.push(task);
            }
        }
        agreed
    }

    /// Queues a notification for each followed task in `which` that changed since it was
    /// last reported; a task that ended (or is gone) is followed no more.
    async fn check(&mut self, which: Option<&str>, id: &RequestId, out: &mut VecDeque<Bytes>) {
        let ids: Vec<String> = match which {
            Some(one) if self.watched.contains_key(one) => vec![one.to_owned()],
            Some(_) => return,
            None => self.watched.keys().cloned().collect(),
        };
        for task in ids {
            match self.tasks.find(&task, &*self.owns).await {
                Ok(record) => {
                    if self.watched.get(&task) != Some(&record.version) {
                        out.push_back(task_notification(&record, id));
                    }
                    if record.status.is_terminal() {
                        self.watched.remove(&task);
                    } else {
                        self.watched.insert(task, record.version);
                    }
                }
                Err(_) => {
                    self.watched.remove(&task);
                }
            }
        }
    }
}

/// `notifications/tasks`: the task as `tasks/get` shows it, tagged with the stream.
fn task_notification(record: &TaskRecord, id: &RequestId) -> Bytes {
    let mut params = serde_json::to_value(record.detailed()).unwrap_or_default();
    if let Value::Object(p) = &mut params {
        p.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
    }
    Bytes::from(jsonrpc::notification_bytes("notifications/tasks", &params))
}

/// What a stream waits for besides the bus.
enum TaskWake {
    Changed(Option<Arc<str>>),
    Poll,
}

async fn task_wake(watch: &mut Option<TaskWatch>) -> TaskWake {
    match watch {
        Some(w) if !w.watched.is_empty() => tokio::select! {
            changed = w.changes.recv() => TaskWake::Changed(changed.ok()),
            _ = w.poll.tick() => TaskWake::Poll,
        },
        _ => std::future::pending().await,
    }
}

/// The graceful end: a result for the listen request, then the stream ends.
fn closing(state: &State) -> Bytes {
    let result = json!({
        "resultType": "complete",
        "_meta": {
            SUBSCRIPTION_ID: state.id,
            SERVER_INFO: { "name": state.shared.config.info.name, "version": state.shared.config.info.version },
        }
    });
    let body = serde_json::to_vec(&result).unwrap_or_default();
    Bytes::from(jsonrpc::result_bytes(&state.id, &body))
}

async fn next(mut state: State) -> Option<(Frame, State)> {
    if !state.acked {
        state.acked = true;
        let mut filter = state.filter.clone();
        let mut snapshots = VecDeque::new();
        if let Some(watch) = &mut state.tasks {
            filter.task_ids = Some(watch.agree(&state.id, &mut snapshots).await);
            // The first tick of an interval is immediate.
            watch.poll.tick().await;
        }
        let ack = jsonrpc::notification_bytes(
            "notifications/subscriptions/acknowledged",
            &json!({ "notifications": filter.to_json(), "_meta": { SUBSCRIPTION_ID: &state.id } }),
        );
        state.outbox = snapshots;
        // After a restart: the lists that changed since the process before (`server/dev.rs`).
        let filter = &state.filter;
        state.outbox.extend(
            state
                .shared
                .lifecycle
                .restart_listen_notices(&state.id, |e| filter.wants(e)),
        );
        // The first tick of an interval is immediate; consume it so keep-alives start later.
        state.tick.tick().await;
        return Some((Frame::Message(Bytes::from(ack)), state));
    }
    if let Some(frame) = state.outbox.pop_front() {
        return Some((Frame::Message(frame), state));
    }
    if state.closed {
        return None;
    }
    loop {
        tokio::select! {
            wake = task_wake(&mut state.tasks) => {
                let which = match wake {
                    TaskWake::Changed(Some(id)) => Some(id),
                    // Lagged behind this process's changes, or the polling tick: look at all.
                    TaskWake::Changed(None) | TaskWake::Poll => None,
                };
                if let Some(watch) = &mut state.tasks {
                    watch.check(which.as_deref(), &state.id, &mut state.outbox).await;
                }
                if let Some(frame) = state.outbox.pop_front() {
                    return Some((Frame::Message(frame), state));
                }
            }
            ev = state.events.recv() => match ev {
                Ok(ev) if !state.filter.wants(&ev) => continue,
                Ok(ev) => {
                    let msg = event_notification(&ev, Some(&state.id));
                    return Some((Frame::Message(msg), state));
                }
                // Too slow to keep up: end gracefully rather than buffer without end.
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => {
                    state.closed = true;
                    let bye = closing(&state);
                    return Some((Frame::Message(bye), state));
                }
            },
            () = state.shared.shutdown.cancelled() => {
                state.closed = true;
                let bye = closing(&state);
                return Some((Frame::Message(bye), state));
            }
            () = signed_out(state.revoked.as_ref()) => {
                state.closed = true;
                let bye = closing(&state);
                return Some((Frame::Message(bye), state));
            }
            _ = state.tick.tick() => return Some((Frame::KeepAlive, state)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;
    use crate::service::Server;
    use serde_json::value::RawValue;

    fn refusal(params: &str) -> String {
        let shared = Server::with_registry(Registry::from_defs([], [], []).unwrap())
            .build()
            .unwrap()
            .shared
            .clone();
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        let params = Params::parse(Some(&raw)).unwrap();
        match listen(
            &shared,
            RequestId::Number(1),
            &params,
            &RequestMeta::default(),
            &http::Extensions::new(),
        ) {
            Ok(_) => panic!("accepted {params:?}"),
            Err(e) => e.message,
        }
    }

    #[test]
    fn a_malformed_filter_is_described_in_protocol_terms() {
        for (raw, shown) in [("5", "5"), ("[]", "[]"), ("[true,true]", "[true,true]")] {
            assert_eq!(
                refusal(&format!(r#"{{"notifications":{raw}}}"#)),
                format!(
                    "Invalid params: `notifications` must be a SubscriptionFilter object, not {shown}"
                )
            );
        }
        assert_eq!(
            refusal(r#"{"notifications":{"toolsListChanged":"yes"}}"#),
            "Invalid params: `notifications` is not a SubscriptionFilter: invalid type: string \"yes\", expected a boolean"
        );
    }
}
