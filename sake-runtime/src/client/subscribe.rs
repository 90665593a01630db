//! Notifications: every one ([`Client::notifications`]), or a [`Subscription`] to list changes
//! and resource updates, through `subscriptions/listen` (2026-07-28) or the session
//! (`resources/subscribe`, the standalone GET stream).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use ::http::HeaderMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::core::{AbortOnDrop, Notification};
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

/// A stream of notifications from the server: a `futures` `Stream`, or call [`recv`].
/// Dropping it ends the subscription.
///
/// [`recv`]: Notifications::recv
pub struct Notifications {
    rx: mpsc::Receiver<Notification>,
    _guards: Vec<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications").finish_non_exhaustive()
    }
}

impl Notifications {
    /// The next notification; `None` once the subscription has ended.
    pub async fn recv(&mut self) -> Option<Notification> {
        self.rx.recv().await
    }
}

impl futures_util::Stream for Notifications {
    type Item = Notification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Notification>> {
        self.rx.poll_recv(cx)
    }
}

/// Forwards the notifications `keep` accepts from the broadcast into a channel.
fn forward(
    mut rx: broadcast::Receiver<Notification>,
    keep: impl Fn(&Notification) -> bool + Send + 'static,
) -> (mpsc::Receiver<Notification>, AbortOnDrop) {
    let (tx, out) = mpsc::channel(256);
    let task = tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(n) if keep(&n) => {
                    if tx.send(n).await.is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(k)) => {
                    tracing::warn!("a subscriber fell behind and lost {k} notifications");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    (out, AbortOnDrop(task))
}

impl Client {
    /// Every notification the server sends from now on, unfiltered.
    pub fn notifications(&self) -> Notifications {
        let (rx, guard) = forward(self.inner.core.listen(), |_| true);
        Notifications {
            rx,
            _guards: vec![Box::new(guard)],
        }
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
            let (rx, guard) = forward(self.inner.core.listen(), move |n| filter.wants(n));
            let client = self.clone();
            let unsubscribe = OnDrop(Some(Box::new(move || {
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
            Ok(Notifications {
                rx,
                _guards: vec![Box::new(guard), Box::new(unsubscribe)],
            })
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
        let mut events = self.inner.core.listen();
        let (done_tx, mut done_rx) = oneshot::channel::<Result<Box<RawValue>, ClientError>>();
        let mut guards: Vec<Box<dyn Send + Sync>> = Vec::new();
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
                let task = tokio::spawn(async move {
                    let out = match h.post_request(&rid, body, headers, sessions).await {
                        Ok(ex) => client.interpret("subscriptions/listen", ex),
                        Err(e) => Err(e),
                    };
                    let _ = done_tx.send(out);
                });
                guards.push(Box::new(AbortOnDrop(task)));
            }
            Transport::Stdio(s) => {
                let rx = self.inner.core.register(&id);
                s.write(body).await?;
                let client = self.clone();
                let task = tokio::spawn(async move {
                    let out = match rx.await {
                        Ok(answer) => client.interpret(
                            "subscriptions/listen",
                            Exchange {
                                status: 200,
                                body: Body::Response(answer),
                            },
                        ),
                        Err(_) => Err(ClientError::Closed),
                    };
                    let _ = done_tx.send(out);
                });
                guards.push(Box::new(AbortOnDrop(task)));
                let stdio = Arc::clone(s);
                let core = Arc::clone(&self.inner.core);
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
                tokio::select! {
                    n = events.recv() => match n {
                        Ok(n) if n.method == "notifications/subscriptions/acknowledged"
                            && n.subscription_id() == Some(&sub_id) => return Ok(()),
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return Err(ClientError::Closed),
                    },
                    done = &mut done_rx => return match done {
                        Ok(Err(e)) => Err(e),
                        _ => Err(ClientError::Protocol(
                            "subscriptions/listen ended before it was acknowledged".into(),
                        )),
                    },
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
        let (rx, guard) = forward(events, move |n| {
            n.subscription_id() == Some(&sub_id)
                && n.method != "notifications/subscriptions/acknowledged"
        });
        guards.push(Box::new(guard));
        Ok(Notifications {
            rx,
            _guards: guards,
        })
    }
}
