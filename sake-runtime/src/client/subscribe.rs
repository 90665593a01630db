//! Notifications: every one ([`Client::notifications`]), or a [`Subscription`] to list changes
//! and resource updates, through `subscriptions/listen` (2026-07-28) or the session
//! (`resources/subscribe`, the standalone GET stream).

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use ::http::HeaderMap;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::core::{AbortOnDrop, Core, EndSlot, Notification, Subscribed};
use super::negotiate::{Body, Exchange};
use super::{Client, ClientError, Transport};
use crate::protocol::jsonrpc::{notification_bytes, request_bytes};

/// What a subscription asks for. Empty fields ask for nothing of that kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_subscriptions: Vec<String>,
}

impl Subscription {
    /// Every list change, and updates of these resources.
    pub fn everything(resources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Subscription {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_subscriptions: resources.into_iter().map(Into::into).collect(),
        }
    }

    fn to_filter(&self) -> Value {
        let mut f = Map::new();
        if self.tools_list_changed {
            f.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.prompts_list_changed {
            f.insert("promptsListChanged".into(), Value::Bool(true));
        }
        if self.resources_list_changed {
            f.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if !self.resource_subscriptions.is_empty() {
            f.insert(
                "resourceSubscriptions".into(),
                json!(self.resource_subscriptions),
            );
        }
        Value::Object(f)
    }

    fn wants(&self, n: &Notification) -> bool {
        match n.method.as_str() {
            "notifications/tools/list_changed" => self.tools_list_changed,
            "notifications/prompts/list_changed" => self.prompts_list_changed,
            "notifications/resources/list_changed" => self.resources_list_changed,
            "notifications/resources/updated" => n
                .uri()
                .is_some_and(|u| self.resource_subscriptions.iter().any(|s| s == u)),
            _ => false,
        }
    }
}

struct OnDrop(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Removes a stream's subscriber from the core when the stream is dropped.
struct Unsubscribe {
    core: Weak<Core>,
    id: u64,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        if let Some(core) = self.core.upgrade() {
            core.end_subscriber(self.id, None);
        }
    }
}

/// The guard that removes subscriber `id` from `core` when dropped.
fn unsubscribe(core: &Arc<Core>, id: u64) -> Box<dyn Send + Sync> {
    Box::new(Unsubscribe {
        core: Arc::downgrade(core),
        id,
    })
}

/// A stream of notifications from the server: a `futures` `Stream`, or call [`recv`].
/// Dropping it ends the subscription.
///
/// It holds at most [`ClientBuilder::notification_buffer`] notifications that were not read
/// yet; a consumer that falls further behind sees the buffered ones, then the end, and
/// [`error`] is [`ClientError::Lagged`]. The stream also ends when the subscription does (the
/// server ended a `subscriptions/listen` request), or the connection (`error` says why, for
/// example [`ClientError::StreamLost`] when the session's GET stream could not be reopened).
///
/// [`recv`]: Notifications::recv
/// [`error`]: Notifications::error
/// [`ClientBuilder::notification_buffer`]: super::ClientBuilder::notification_buffer
pub struct Notifications {
    rx: mpsc::Receiver<Notification>,
    end: EndSlot,
    error: Option<ClientError>,
    guards: Vec<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Notifications {
    /// A stream over `sub`; `guards` end the subscription when dropped (the first removes
    /// `sub` from the core: [`unsubscribe`]).
    fn new(sub: Subscribed, guards: Vec<Box<dyn Send + Sync>>) -> Self {
        Notifications {
            rx: sub.rx,
            end: sub.end,
            error: None,
            guards,
        }
    }

    /// The next notification; `None` once the stream has ended ([`error`](Self::error) then
    /// says why, when it ended with an error).
    pub async fn recv(&mut self) -> Option<Notification> {
        let next = self.rx.recv().await;
        if next.is_none() {
            self.finish();
        }
        next
    }

    /// Why the stream ended, once [`recv`](Self::recv) returned `None`: `None` while it runs
    /// and when it ended without an error (the server completed the subscription).
    pub fn error(&self) -> Option<&ClientError> {
        self.error.as_ref()
    }

    /// The stream has ended: keep why, and end the subscription.
    fn finish(&mut self) {
        if self.error.is_none()
            && let Ok(mut slot) = self.end.lock()
        {
            self.error = slot.take();
        }
        self.guards.clear();
    }
}

impl futures_util::Stream for Notifications {
    type Item = Notification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Notification>> {
        let next = self.rx.poll_recv(cx);
        if let Poll::Ready(None) = next {
            self.finish();
        }
        next
    }
}

impl Client {
    /// Every notification the server sends from now on, unfiltered.
    pub fn notifications(&self) -> Notifications {
        let core = &self.inner.core;
        let sub = core.subscribe(|_| true);
        let guard = unsubscribe(core, sub.id);
        Notifications::new(sub, vec![guard])
    }

    /// Subscribes to list changes and resource updates. On 2026-07-28 this opens a
    /// `subscriptions/listen` stream and returns once the server acknowledged it; on the
    /// handshake revisions it sends `resources/subscribe` for each resource and listens to the
    /// session's notifications. Dropping the stream ends the subscription.
    pub async fn subscribe(&self, what: Subscription) -> Result<Notifications, ClientError> {
        if self.revision().features().listen {
            self.listen(what).await
        } else {
            for uri in &what.resource_subscriptions {
                let mut params = Map::new();
                params.insert("uri".into(), json!(uri));
                self.send("resources/subscribe", params).await?;
            }
            let uris = what.resource_subscriptions.clone();
            let filter = what.clone();
            let core = &self.inner.core;
            let sub = core.subscribe(move |n| filter.wants(n));
            let client = self.clone();
            let unsubscribe_uris = OnDrop(Some(Box::new(move || {
                if uris.is_empty() {
                    return;
                }
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        for uri in uris {
                            let mut params = Map::new();
                            params.insert("uri".into(), json!(uri));
                            let _ = client.send("resources/unsubscribe", params).await;
                        }
                    });
                }
            })));
            let guard = unsubscribe(core, sub.id);
            Ok(Notifications::new(
                sub,
                vec![guard, Box::new(unsubscribe_uris)],
            ))
        }
    }

    async fn listen(&self, what: Subscription) -> Result<Notifications, ClientError> {
        let mut params = Map::new();
        params.insert("notifications".into(), what.to_filter());
        let rev = self.revision();
        let params = self.with_meta(params, rev);
        let id = self.inner.core.next_id();
        let body = request_bytes(&id, "subscriptions/listen", &params);
        let sub_id = json!(id);
        let core = Arc::clone(&self.inner.core);
        // The acknowledgement and every notification of this subscription: the ones before
        // the acknowledgement are dropped below.
        let mut sub = core.subscribe(move |n| n.subscription_id() == Some(&sub_id));
        let sub_key = sub.id;
        let mut guards = vec![unsubscribe(&core, sub_key)];
        match &self.inner.transport {
            Transport::Http(h) => {
                let headers = if rev.features().routing_headers {
                    self.routing_headers(rev, "subscriptions/listen", &params)?
                } else {
                    HeaderMap::new()
                };
                let sessions = rev.features().session_id;
                let h = Arc::clone(h);
                let client = self.clone();
                let rid = id.clone();
                let core = Arc::clone(&core);
                let task = tokio::spawn(async move {
                    let out = match h.post_request(&rid, body, headers, sessions).await {
                        Ok(ex) => client.interpret("subscriptions/listen", ex),
                        Err(e) => Err(e),
                    };
                    // The request's end is the subscription's: the stream ends with it.
                    core.end_subscriber(sub_key, out.err());
                });
                guards.push(Box::new(AbortOnDrop(task)));
            }
            Transport::Stdio(s) => {
                let rx = core.register(&id);
                s.write(body).await?;
                let client = self.clone();
                let ended = Arc::clone(&core);
                let task = tokio::spawn(async move {
                    let out = match rx.await {
                        Ok(answer) => client.interpret(
                            "subscriptions/listen",
                            Exchange {
                                status: 200,
                                body: Body::Response(answer),
                            },
                        ),
                        Err(_) => Err(ended.closed_error()),
                    };
                    ended.end_subscriber(sub_key, out.err());
                });
                guards.push(Box::new(AbortOnDrop(task)));
                let stdio = Arc::clone(s);
                let core = Arc::clone(&core);
                let cancel_id = id.clone();
                let meta = self.with_meta(Map::new(), rev);
                guards.push(Box::new(OnDrop(Some(Box::new(move || {
                    core.unregister(&cancel_id);
                    let mut params = meta;
                    params.insert("requestId".into(), json!(cancel_id));
                    let body = notification_bytes("notifications/cancelled", &params);
                    if let Ok(rt) = tokio::runtime::Handle::try_current() {
                        rt.spawn(async move {
                            let _ = stdio.write(body).await;
                        });
                    }
                })))));
            }
        }
        // Wait for the acknowledgement (or the end of the request).
        let wait = self.inner.timeout.unwrap_or(Duration::from_secs(30));
        let acked = tokio::time::timeout(wait, async {
            loop {
                match sub.rx.recv().await {
                    Some(n) if n.method == "notifications/subscriptions/acknowledged" => {
                        return Ok(());
                    }
                    Some(_) => {}
                    None => {
                        let why = sub.end.lock().ok().and_then(|mut e| e.take());
                        return Err(why.unwrap_or_else(|| {
                            ClientError::Protocol(
                                "subscriptions/listen ended before it was acknowledged".into(),
                            )
                        }));
                    }
                }
            }
        })
        .await;
        match acked {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(ClientError::Timeout {
                    method: "subscriptions/listen".into(),
                    millis: wait.as_millis(),
                });
            }
        }
        Ok(Notifications::new(sub, guards))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::sync::Notify;

    use super::*;
    use crate::client::fake::{
        Reply, Seen, Step, builder, discover_result, fake, legacy, meta, modern, result_for, stdio,
    };

    fn note(method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    fn for_sub(method: &str, sub: &Value) -> Value {
        note(
            method,
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": sub}}),
        )
    }

    #[test]
    fn a_subscription_asks_for_exactly_its_fields() {
        assert_eq!(Subscription::default().to_filter(), json!({}));
        let all = Subscription::everything(["file:///a"]);
        assert_eq!(
            all.to_filter(),
            json!({"toolsListChanged": true, "promptsListChanged": true,
                "resourcesListChanged": true, "resourceSubscriptions": ["file:///a"]})
        );
        let tools = Subscription {
            tools_list_changed: true,
            resource_subscriptions: vec!["file:///a".into()],
            ..Subscription::default()
        };
        let n = |method: &str, params: Value| Notification {
            method: method.into(),
            params,
        };
        assert!(tools.wants(&n("notifications/tools/list_changed", Value::Null)));
        assert!(!tools.wants(&n("notifications/prompts/list_changed", Value::Null)));
        assert!(!tools.wants(&n("notifications/resources/list_changed", Value::Null)));
        assert!(tools.wants(&n(
            "notifications/resources/updated",
            json!({"uri": "file:///a"})
        )));
        assert!(!tools.wants(&n(
            "notifications/resources/updated",
            json!({"uri": "file:///b"})
        )));
        assert!(!tools.wants(&n("notifications/message", json!({}))));
    }

    #[tokio::test]
    async fn on_2026_a_subscription_is_a_listen_request_and_its_stream() {
        let open = Arc::new(Notify::new());
        let hold = Arc::clone(&open);
        let f = fake(modern(move |s: &Seen| {
            let id = s.id();
            Reply::Events(vec![
                Step::Message(for_sub("notifications/subscriptions/acknowledged", &id)),
                Step::Message(for_sub("notifications/tools/list_changed", &id)),
                // Another subscription's notification is not this one's.
                Step::Message(for_sub("notifications/tools/list_changed", &json!(99))),
                Step::Message(for_sub("notifications/prompts/list_changed", &id)),
                Step::Wait(Arc::clone(&hold)),
            ])
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let mut stream = client
            .subscribe(Subscription {
                tools_list_changed: true,
                prompts_list_changed: true,
                ..Subscription::default()
            })
            .await
            .unwrap();
        let listen = f.last("subscriptions/listen");
        assert_eq!(
            listen.params(),
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true},
                "_meta": meta()})
        );
        assert_eq!(listen.header("mcp-method"), Some("subscriptions/listen"));
        assert_eq!(listen.header("mcp-protocol-version"), Some("2026-07-28"));
        let id = listen.id();
        let first = stream.recv().await.unwrap();
        assert_eq!(first.method, "notifications/tools/list_changed");
        assert_eq!(first.subscription_id(), Some(&id));
        let second = stream.recv().await.unwrap();
        assert_eq!(second.method, "notifications/prompts/list_changed");
        assert_eq!(second.subscription_id(), Some(&id));
        drop(stream);
        open.notify_one();
    }

    #[tokio::test]
    async fn a_listen_stream_ends_with_its_request() {
        // The first subscription is completed by the server; the second breaks off.
        let f = fake(modern(move |s: &Seen| {
            let id = s.id();
            let mut steps = vec![
                Step::Message(for_sub("notifications/subscriptions/acknowledged", &id)),
                Step::Message(for_sub("notifications/tools/list_changed", &id)),
            ];
            if s.params()["notifications"]
                .get("toolsListChanged")
                .is_some()
            {
                steps.push(Step::Message(json!({"jsonrpc": "2.0", "id": id,
                    "result": {"resultType": "complete"}})));
            }
            Reply::Events(steps)
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let tools = Subscription {
            tools_list_changed: true,
            ..Subscription::default()
        };
        let mut completed = client.subscribe(tools).await.unwrap();
        let n = completed.recv().await.unwrap();
        assert_eq!(n.method, "notifications/tools/list_changed");
        assert_eq!(completed.recv().await, None);
        assert!(completed.error().is_none(), "{:?}", completed.error());
        let mut broken = client.subscribe(Subscription::default()).await.unwrap();
        let id = f.last("subscriptions/listen").id();
        assert_eq!(
            broken.recv().await.map(|n| n.method),
            Some("notifications/tools/list_changed".to_owned())
        );
        assert_eq!(broken.recv().await, None);
        assert_eq!(
            broken.error().map(ToString::to_string),
            Some(format!(
                "protocol error: the event stream of request {id} ended before its response"
            ))
        );
    }

    #[tokio::test]
    async fn a_listen_that_is_refused_or_ends_unacknowledged_is_an_error() {
        let f = fake(modern(|s| {
            match s.params()["notifications"].get("toolsListChanged") {
                Some(_) => Reply::error(200, s, -32601),
                None => Reply::Events(vec![]),
            }
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let tools = Subscription {
            tools_list_changed: true,
            ..Subscription::default()
        };
        let err = client.subscribe(tools).await.unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32601));
        let err = client.subscribe(Subscription::default()).await.unwrap_err();
        let id = f.last("subscriptions/listen").id();
        assert_eq!(
            err.to_string(),
            format!("protocol error: the event stream of request {id} ended before its response")
        );
    }

    #[tokio::test]
    async fn on_a_handshake_revision_resources_are_subscribed_and_news_come_on_the_get_stream() {
        let go = Arc::new(Notify::new());
        let gate = Arc::clone(&go);
        let hold = Arc::new(Notify::new());
        let held = Arc::clone(&hold);
        let opened = AtomicBool::new(false);
        let session = legacy(Some("s1"), |s| Reply::result(s, json!({})));
        let f = fake(move |s: &Seen| {
            if s.http == "GET" && !opened.swap(true, Ordering::SeqCst) {
                return Reply::Events(vec![
                    Step::Wait(Arc::clone(&gate)),
                    Step::Message(note(
                        "notifications/resources/updated",
                        json!({"uri": "file:///a"}),
                    )),
                    Step::Message(note(
                        "notifications/resources/updated",
                        json!({"uri": "file:///b"}),
                    )),
                    Step::Message(note("notifications/prompts/list_changed", json!({}))),
                    Step::Message(note("notifications/tools/list_changed", json!({}))),
                    Step::Wait(Arc::clone(&held)),
                ]);
            }
            session(s)
        })
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let mut stream = client
            .subscribe(Subscription {
                tools_list_changed: true,
                resource_subscriptions: vec!["file:///a".into()],
                ..Subscription::default()
            })
            .await
            .unwrap();
        let sub = f.last("resources/subscribe");
        assert_eq!(sub.params(), json!({"uri": "file:///a"}));
        assert_eq!(sub.header("mcp-session-id"), Some("s1"));
        assert_eq!(sub.header("mcp-method"), None);
        assert!(!f.methods().iter().any(|m| m == "subscriptions/listen"));
        go.notify_one();
        let first = stream.recv().await.unwrap();
        assert_eq!(
            first,
            Notification {
                method: "notifications/resources/updated".into(),
                params: json!({"uri": "file:///a"}),
            }
        );
        let second = stream.recv().await.unwrap();
        assert_eq!(second.method, "notifications/tools/list_changed");
        // Dropping the stream unsubscribes.
        drop(stream);
        f.wait_for("resources/unsubscribe").await;
        assert_eq!(
            f.last("resources/unsubscribe").params(),
            json!({"uri": "file:///a"})
        );
        hold.notify_one();
    }

    #[tokio::test]
    async fn on_stdio_a_dropped_listen_is_cancelled_and_every_notification_is_seen() {
        let (client, server) = stdio(builder(), |msg| match msg["method"].as_str() {
            Some("server/discover") => vec![result_for(msg, discover_result())],
            Some("subscriptions/listen") => vec![for_sub(
                "notifications/subscriptions/acknowledged",
                &msg["id"],
            )],
            Some("notifications/roots/list_changed") => vec![note(
                "notifications/message",
                json!({"level": "info", "data": "roots noted"}),
            )],
            _ => vec![],
        })
        .await;
        let client = client.unwrap();
        let mut all = client.notifications();
        let stream = client.subscribe(Subscription::default()).await.unwrap();
        let listen = server.wait_for("subscriptions/listen").await;
        assert_eq!(
            listen["params"],
            json!({"notifications": {}, "_meta": meta()})
        );
        drop(stream);
        let cancelled = server.wait_for("notifications/cancelled").await;
        assert_eq!(
            cancelled,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"_meta": meta(), "requestId": listen["id"]}})
        );
        // The unfiltered stream saw the acknowledgement, and sees what comes next.
        let ack = all.recv().await.unwrap();
        assert_eq!(ack.method, "notifications/subscriptions/acknowledged");
        client
            .notify("notifications/roots/list_changed", json!({}))
            .await
            .unwrap();
        assert_eq!(
            all.recv().await.unwrap(),
            Notification {
                method: "notifications/message".into(),
                params: json!({"level": "info", "data": "roots noted"}),
            }
        );
    }
}
