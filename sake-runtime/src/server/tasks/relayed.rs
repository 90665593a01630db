//! Relayed tasks: an upstream's task (a [`Source`]'s, `Server::proxy`) held for the caller that
//! created it under an id of this server's, and `tasks/get`, `tasks/update`, `tasks/cancel` of
//! that id relayed to it (the module above says why and how).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use serde_json::{Map, Value};

use super::{Tasks, ack, method_name, not_found, store_error};
use crate::handler::context::RequestParts;
use crate::protocol::Revision;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache};
use crate::protocol::tasks::{Task, declared};
use crate::server::Shared;
use crate::server::source::Source;
use crate::tasks::{TaskStoreError, new_task_id, now_ms};

/// How many relayed tasks are held, in all and per caller (as the memory store's defaults).
const MAX_RELAYED: usize = 10_000;
const MAX_RELAYED_PER_CALLER: usize = 1_000;
/// The longest a relayed task is held (an upstream may keep its tasks longer, or forever).
const MAX_RELAY_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// How long at most a relayed task is held after its time to live: its end stays readable.
const RELAY_KEEP_MS: u64 = 60 * 1000;
/// The longest upstream task id taken (an upstream's answer is hostile until checked).
const MAX_UPSTREAM_ID: usize = 256;

/// The tasks of upstream servers this server relays (see the module's documentation), by
/// the id the caller was given.
#[derive(Default)]
pub(super) struct Relayed {
    entries: Mutex<HashMap<String, Relay>>,
}

/// One relayed task.
struct Relay {
    source: Arc<dyn Source>,
    /// The upstream's id for it.
    upstream: String,
    /// The caller that created it (as [`TaskRecord::principal`]).
    principal: Option<String>,
    /// Whose count it is in (its principal, or an anonymous caller's network).
    counted_as: String,
    /// When it is forgotten (milliseconds since the Unix epoch).
    expires_at: u64,
}

impl Tasks {
    /// Holds an upstream's task for the caller that created it: the id the caller is given.
    pub(super) fn relay_new(
        &self,
        source: Arc<dyn Source>,
        upstream: &str,
        (principal, counted_as): (Option<String>, String),
        ttl_ms: Option<u64>,
    ) -> Result<String, RpcError> {
        if upstream.is_empty() || upstream.len() > MAX_UPSTREAM_ID {
            return Err(RpcError::internal(format!(
                "Internal error: the upstream server `{}` answered with a task id of {} bytes (1 to {MAX_UPSTREAM_ID} are taken)",
                source.label(),
                upstream.len()
            )));
        }
        let id = new_task_id().ok_or_else(|| {
            tracing::error!("the system's random source failed");
            RpcError::internal("Internal error: no task id could be made")
        })?;
        let now = now_ms();
        let ttl = ttl_ms
            .unwrap_or_else(|| u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
            .min(MAX_RELAY_TTL_MS);
        let mut entries = self
            .relayed
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        entries.retain(|_, r| r.expires_at > now);
        if entries.len() >= MAX_RELAYED {
            return Err(store_error(TaskStoreError::full(
                format!("this server relays {MAX_RELAYED} tasks of upstream servers already"),
                false,
            )));
        }
        let mine = entries
            .values()
            .filter(|r| r.counted_as == counted_as)
            .count();
        if mine >= MAX_RELAYED_PER_CALLER {
            return Err(store_error(TaskStoreError::full(
                format!(
                    "this caller has {MAX_RELAYED_PER_CALLER} tasks of upstream servers already; wait for some to end"
                ),
                true,
            )));
        }
        entries.insert(
            id.clone(),
            Relay {
                source,
                upstream: upstream.to_owned(),
                principal,
                counted_as,
                expires_at: now.saturating_add(ttl).saturating_add(RELAY_KEEP_MS),
            },
        );
        Ok(id)
    }

    /// The upstream and its id for a relayed task `id`: `None` when `id` is no relayed task
    /// (a task of this server's, or none); the error of an unknown task when it is another
    /// caller's (its existence does not leak).
    #[allow(clippy::type_complexity)]
    pub(super) fn relayed(
        &self,
        id: &str,
        owns: &(dyn Fn(Option<&str>) -> bool + Send + Sync),
    ) -> Option<Result<(Arc<dyn Source>, String), RpcError>> {
        let now = now_ms();
        let mut entries = self
            .relayed
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let relay = entries.get(id)?;
        if relay.expires_at <= now {
            entries.remove(id);
            return Some(Err(not_found(id)));
        }
        if !owns(relay.principal.as_deref()) {
            return Some(Err(not_found(id)));
        }
        Some(Ok((relay.source.clone(), relay.upstream.clone())))
    }
}

/// What relays the task an upstream may make of a remote tool's call: the caller's, when it
/// declared the extension.
pub(crate) struct RelayFor {
    tasks: Arc<Tasks>,
    source: Arc<dyn Source>,
    /// The caller, and whose count its tasks are in.
    owner: (Option<String>, String),
}

impl RelayFor {
    /// The caller's `CreateTaskResult` for the upstream's (`task`, as it sent it): the same
    /// task under an id of this server's.
    pub(crate) fn created(
        self,
        shared: &Shared,
        rev: Revision,
        task: Value,
    ) -> Result<Bytes, RpcError> {
        let label = self.source.label();
        shared.admission.check_memory("a relayed task")?;
        let mut task: Task = serde_json::from_value(task).map_err(|e| {
            RpcError::internal(format!(
                "Internal error: the upstream server `{label}` answered with a malformed task: {e}"
            ))
        })?;
        let id = self
            .tasks
            .relay_new(self.source, &task.task_id, self.owner, task.ttl_ms)?;
        tracing::debug!(task = %id, upstream = label, "an upstream's task is relayed");
        task.task_id = id;
        Ok(Bytes::from(render::task_created(&shared.env, rev, &task)))
    }
}

impl Shared {
    /// What relays a task `source` makes of a call of `parts`: `None` when the request did
    /// not declare the extension (the upstream is then not offered one).
    pub(crate) fn relay_for(
        &self,
        parts: &RequestParts,
        source: &Arc<dyn Source>,
    ) -> Option<RelayFor> {
        let tasks = self.tasks.clone()?;
        if !parts.revision.features().tasks || !declared(&parts.meta.client_capabilities) {
            return None;
        }
        Some(RelayFor {
            tasks,
            source: source.clone(),
            owner: (
                self.callers.principal_of(&parts.extensions),
                self.callers.owner_of(&parts.extensions),
            ),
        })
    }
}

/// `tasks/get`, `tasks/update` or `tasks/cancel` of a relayed task `id` (the upstream's
/// `upstream`), relayed: the upstream's task under this server's id; an update's or a
/// cancellation's ack.
pub(super) async fn relay_method(
    shared: &Shared,
    source: &dyn Source,
    (method, responses, rev): (Method, Option<Map<String, Value>>, Revision),
    (id, upstream): (&str, &str),
) -> Result<Bytes, RpcError> {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(upstream.to_owned()));
    if let Some(r) = responses {
        params.insert("inputResponses".into(), Value::Object(r));
    }
    let name = method_name(method);
    let answered = source.task(name, params).await.map_err(|mut e| {
        // The caller knows the task by this server's id only.
        e.message = e.message.replace(upstream, id);
        e
    })?;
    match method {
        Method::TasksGet => {
            let Value::Object(mut task) = answered else {
                return Err(RpcError::internal(format!(
                    "Internal error: the upstream server `{}` answered tasks/get with no object",
                    source.label()
                )));
            };
            task.insert("taskId".into(), Value::String(id.to_owned()));
            Ok(Bytes::from(render::result_value(
                rev,
                &shared.env,
                Cache::None,
                Value::Object(task),
            )))
        }
        _ => Ok(ack(shared, rev)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::handler::BoxFuture;
    use crate::handler::context::Context;
    use crate::handler::events::Notifier;
    use crate::server::source::{Following, ListKind, Listed};
    use crate::tasks::MemoryTaskStore;

    fn tasks() -> Tasks {
        Tasks::new(
            Arc::new(MemoryTaskStore::new()),
            Duration::from_secs(300),
            Duration::from_secs(1),
            Duration::from_secs(30),
            None,
        )
    }

    /// A source that is never asked anything: holding a link calls nothing.
    #[derive(Debug)]
    struct Unreached;

    impl Source for Unreached {
        fn label(&self) -> &'static str {
            "up"
        }
        fn list(&self, _: ListKind) -> BoxFuture<Result<Listed, RpcError>> {
            unreachable!("a link lists nothing")
        }
        fn owns(&self, _: ListKind, _: &str) -> bool {
            false
        }
        fn forward(
            &self,
            _: &'static str,
            _: Map<String, Value>,
            _: Context,
        ) -> BoxFuture<Result<Value, RpcError>> {
            unreachable!("a link forwards nothing")
        }
        fn follow(&self, _: &str, _: crate::quota::Key) -> Option<Following> {
            None
        }
        fn attach(&self, _: Notifier) {}
    }

    fn source() -> Arc<dyn Source> {
        Arc::new(Unreached)
    }

    fn caller(name: &str) -> (Option<String>, String) {
        (Some(name.to_owned()), name.to_owned())
    }

    #[test]
    fn a_relayed_task_is_its_callers_only_under_a_fresh_id() {
        let tasks = tasks();
        let id = tasks
            .relay_new(source(), "upstream-7", caller("alice"), Some(60_000))
            .unwrap();
        assert_eq!(id.len(), 32);
        assert_ne!(id, "upstream-7");
        let alice = |p: Option<&str>| p == Some("alice");
        let (s, upstream) = tasks.relayed(&id, &alice).unwrap().unwrap();
        assert_eq!((s.label(), upstream.as_str()), ("up", "upstream-7"));
        // Another caller's id answers as an unknown one.
        let bob = |p: Option<&str>| p == Some("bob");
        let e = tasks.relayed(&id, &bob).unwrap().unwrap_err();
        assert_eq!((e.code, e.message), (-32602, not_found(&id).message));
        // An id it does not relay is the store's to answer.
        assert!(tasks.relayed("0123", &alice).is_none());
        // Two upstreams' equal ids are two tasks.
        let other = tasks
            .relay_new(source(), "upstream-7", caller("alice"), None)
            .unwrap();
        assert_ne!(other, id);
    }

    #[test]
    fn the_links_a_caller_makes_are_bounded() {
        let tasks = tasks();
        for n in 0..MAX_RELAYED_PER_CALLER {
            tasks
                .relay_new(source(), &format!("t{n}"), caller("alice"), None)
                .unwrap();
        }
        let e = tasks
            .relay_new(source(), "one-more", caller("alice"), None)
            .unwrap_err();
        assert_eq!(e.code, -32000);
        assert_eq!(e.status(), 429);
        assert_eq!(
            e.message,
            "Too many tasks: this caller has 1000 tasks of upstream servers already; wait for some to end"
        );
        // Another caller is not held back by alice's.
        tasks
            .relay_new(source(), "t0", caller("bob"), None)
            .unwrap();
        // A hostile upstream's id is refused, not kept.
        let e = tasks
            .relay_new(source(), &"x".repeat(257), caller("bob"), None)
            .unwrap_err();
        assert_eq!(e.code, -32603);
        assert_eq!(
            e.message,
            "Internal error: the upstream server `up` answered with a task id of 257 bytes (1 to 256 are taken)"
        );
    }
}
