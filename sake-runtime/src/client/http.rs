//! Streamable HTTP, both eras, on hyper's HTTP/1 client (http, and https through rustls).
//!
//! Each request is one POST; its answer is a JSON body or an event stream carrying
//! notifications (and, on the handshake revisions, the server's own requests) before the
//! response. On the handshake revisions the client also keeps the session id, the
//! `MCP-Protocol-Version` header, the standalone GET stream, and resumes a dropped stream with
//! `Last-Event-ID` after the server's `retry` interval (at least the client's floor, with
//! backoff when reopenings fail: [`Backoff`]).
//!
//! With an [`Auth`], every request carries its credentials, and a `401` or `403` is handed to
//! it; when it renews them, the request is sent again (a few times at most).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;

use super::auth::{Auth, AuthRequest, Refusal};
use super::core::{AbortOnDrop, Answer, Core, Ended, Msg, clip, parse_message, response_body};
use super::error::ClientError;
use super::limits::Backoff;
use super::negotiate::{Body, Exchange};
use super::sse::{Parser, TooLarge};
use crate::protocol::Revision;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::RequestId;

/// The server's requests of one stream being answered.
type Answering<'a> = FuturesUnordered<BoxFuture<'a, ()>>;

/// How often one request is sent again after its [`Auth`] renewed the credentials.
const MAX_AUTH_RETRIES: usize = 4;
/// The longest body of a refusal read (to free the connection).
const MAX_REFUSAL_BODY: usize = 64 << 10;
/// The longest body read of an error status, or of the answer to a notification or response.
const MAX_ERROR_BODY: usize = 1 << 20;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The handshake-era state of the connection.
#[derive(Debug, Default)]
struct Session {
    /// The revision `initialize` settled on: sent as `MCP-Protocol-Version` from then on.
    version: Option<Revision>,
    /// The session id, as the server last minted it.
    id: Option<HeaderValue>,
}

/// One HTTP endpoint.
pub(crate) struct Http {
    pub(crate) url: String,
    uri: http::Uri,
    hyper: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    headers: HeaderMap,
    session: Mutex<Session>,
    pub(crate) core: Arc<Core>,
    get_stream: Mutex<Option<AbortOnDrop>>,
    auth: Option<Arc<dyn Auth>>,
    /// The authorization flows running and when the last ended (a request's timeout waits
    /// for them).
    authorizing: Flows,
}

/// The authorization flows of a transport: how many run, and when the last one ended.
#[derive(Default)]
struct Flows {
    running: AtomicUsize,
    last_end: Mutex<Option<tokio::time::Instant>>,
}

/// Counts an authorization flow while it runs.
struct Authorizing<'a>(&'a Flows);

impl<'a> Authorizing<'a> {
    fn start(flows: &'a Flows) -> Self {
        flows.running.fetch_add(1, Ordering::SeqCst);
        Authorizing(flows)
    }
}

impl Drop for Authorizing<'_> {
    fn drop(&mut self) {
        if let Ok(mut end) = self.0.last_end.lock() {
            *end = Some(tokio::time::Instant::now());
        }
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Checks a header value before it is sent: visible ASCII and spaces only (no control byte).
pub(crate) fn header_value(name: &str, value: &str) -> Result<HeaderValue, ClientError> {
    if let Some(b) = value
        .bytes()
        .find(|&b| !(b == b' ' || (0x21..=0x7e).contains(&b)))
    {
        return Err(ClientError::InvalidHeader {
            name: name.to_owned(),
            reason: format!(
                "the value {value:?} holds the byte 0x{b:02x}; only visible ASCII and spaces may be sent"
            ),
        });
    }
    HeaderValue::from_str(value).map_err(|e| ClientError::InvalidHeader {
        name: name.to_owned(),
        reason: e.to_string(),
    })
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// Why a body or an event stream was not read to its end.
#[derive(Debug)]
enum ReadError {
    /// Over the limit (a body, or one event).
    TooLarge,
    /// The connection broke.
    Broken(String),
}

/// Reads a body of at most `limit` bytes: one with a longer `Content-Length` is refused
/// before any of it is read, and reading stops as soon as the limit is passed.
async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, ReadError> {
    let mut body = body;
    if hyper::body::Body::size_hint(&body).lower() > u64::try_from(limit).unwrap_or(u64::MAX) {
        return Err(ReadError::TooLarge);
    }
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ReadError::Broken(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if out.len().saturating_add(data.len()) > limit {
                return Err(ReadError::TooLarge);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

/// How one event stream ended.
struct Pumped {
    /// The JSON-RPC messages it delivered.
    messages: usize,
    end: Result<(), ReadError>,
}

/// The messages of a JSON body: one object, or an array of them (2025-03-26 batches).
fn json_messages(bytes: &[u8]) -> Vec<Vec<u8>> {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'[')
        && let Ok(items) = serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(bytes)
    {
        return items
            .into_iter()
            .map(|r| r.get().as_bytes().to_vec())
            .collect();
    }
    vec![bytes.to_vec()]
}

impl Http {
    pub(crate) fn new(
        url: &str,
        headers: HeaderMap,
        core: Arc<Core>,
        auth: Option<Arc<dyn Auth>>,
    ) -> Result<Self, ClientError> {
        let bad = |reason: String| ClientError::InvalidUrl {
            url: url.to_owned(),
            reason,
        };
        let uri: http::Uri = url.parse().map_err(|e| bad(format!("{e}")))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err(bad("the URL must start with http:// or https://".into())),
        }
        if uri.host().is_none() {
            return Err(bad("the URL has no host".into()));
        }
        let connector = crate::net::fetch::https_connector().map_err(|e| ClientError::Network {
            url: url.to_owned(),
            message: e,
        })?;
        let hyper = HyperClient::builder(TokioExecutor::new()).build(connector);
        Ok(Http {
            url: url.to_owned(),
            uri,
            hyper,
            headers,
            session: Mutex::new(Session::default()),
            core,
            get_stream: Mutex::new(None),
            auth,
            authorizing: Flows::default(),
        })
    }

    /// A later deadline for a request whose `timeout` ran out while the transport was
    /// authorizing (a user may be signing in): `timeout` from now while a flow runs, or from
    /// the end of the last one; `None` when no flow delayed it.
    pub(crate) fn extended_deadline(&self, timeout: Duration) -> Option<tokio::time::Instant> {
        let now = tokio::time::Instant::now();
        if self.authorizing.running.load(Ordering::SeqCst) > 0 {
            return Some(now + timeout);
        }
        let end = (*self.authorizing.last_end.lock().ok()?)?;
        Some(end + timeout).filter(|d| *d > now)
    }

    /// Sends one request with the [`Auth`]'s credentials; a `401` or `403` goes to the
    /// [`Auth`], and the request is sent again when it renewed them. Without an [`Auth`], a
    /// `401` is [`ClientError::Unauthorized`].
    async fn send(
        &self,
        method: Method,
        extra: HeaderMap,
        body: Bytes,
    ) -> Result<Response<Incoming>, ClientError> {
        let mut retries = 0;
        loop {
            let mut req = self.request(method.clone(), extra.clone(), body.clone())?;
            let sent = match &self.auth {
                Some(auth) => {
                    let credentials = auth
                        .credentials(&AuthRequest {
                            server: &self.url,
                            method: &method,
                        })
                        .await?;
                    for (k, v) in &credentials {
                        req.headers_mut().insert(k, v.clone());
                    }
                    credentials
                }
                None => HeaderMap::new(),
            };
            let resp = self
                .hyper
                .request(req)
                .await
                .map_err(|e| self.network(crate::net::fetch::describe(&e)))?;
            let status = resp.status();
            if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
                return Ok(resp);
            }
            let Some(auth) = &self.auth else {
                if status == StatusCode::UNAUTHORIZED {
                    return Err(ClientError::Unauthorized {
                        status: status.as_u16(),
                        challenge: resp
                            .headers()
                            .get(WWW_AUTHENTICATE)
                            .and_then(|v| v.to_str().ok())
                            .map(clip),
                    });
                }
                return Ok(resp);
            };
            if retries == MAX_AUTH_RETRIES {
                return Ok(resp);
            }
            let (parts, body_in) = resp.into_parts();
            // Read what is left so that the connection can be used again.
            let refusal_body = read_body(body_in, MAX_REFUSAL_BODY)
                .await
                .unwrap_or_default();
            let renewed = {
                let _flow = Authorizing::start(&self.authorizing);
                auth.refused(&Refusal {
                    server: &self.url,
                    status: status.as_u16(),
                    headers: &parts.headers,
                    sent: &sent,
                    retries,
                })
                .await?
            };
            if !renewed {
                return Err(if status == StatusCode::UNAUTHORIZED {
                    ClientError::Unauthorized {
                        status: status.as_u16(),
                        challenge: parts
                            .headers
                            .get(WWW_AUTHENTICATE)
                            .and_then(|v| v.to_str().ok())
                            .map(clip),
                    }
                } else {
                    ClientError::Http {
                        status: status.as_u16(),
                        body: clip(&String::from_utf8_lossy(&refusal_body)),
                    }
                });
            }
            retries += 1;
        }
    }

    /// Sets the handshake revision (sent as `MCP-Protocol-Version` from now on).
    pub(crate) fn set_version(&self, version: Option<Revision>) {
        if let Ok(mut s) = self.session.lock() {
            s.version = version;
        }
    }

    /// Forgets the session (before a new `initialize`).
    pub(crate) fn reset_session(&self) {
        if let Ok(mut s) = self.session.lock() {
            *s = Session::default();
        }
        if let Ok(mut g) = self.get_stream.lock() {
            g.take();
        }
    }

    /// Whether a session id is held.
    pub(crate) fn has_session(&self) -> bool {
        self.session.lock().is_ok_and(|s| s.id.is_some())
    }

    /// The session id, if any.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.session.lock().ok().and_then(|s| {
            s.id.as_ref()
                .and_then(|v| v.to_str().ok().map(str::to_owned))
        })
    }

    fn network(&self, e: impl std::fmt::Display) -> ClientError {
        ClientError::Network {
            url: self.url.clone(),
            message: e.to_string(),
        }
    }

    fn request(
        &self,
        method: Method,
        extra: HeaderMap,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, ClientError> {
        let mut req = Request::builder()
            .method(method)
            .uri(self.uri.clone())
            .body(Full::new(body))
            .map_err(|e| self.network(e))?;
        let h = req.headers_mut();
        for (k, v) in &self.headers {
            h.append(k, v.clone());
        }
        if let Ok(s) = self.session.lock() {
            if let Some(v) = s.version {
                h.insert(PROTOCOL_VERSION, HeaderValue::from_static(v.as_str()));
            }
            if let Some(id) = &s.id {
                h.insert(SESSION_ID, id.clone());
            }
        }
        for (k, v) in extra {
            if let Some(k) = k {
                h.insert(k, v);
            }
        }
        Ok(req)
    }

    /// Keeps the session id the server sends (a re-minted one replaces the old).
    fn track_session(&self, headers: &HeaderMap) -> Result<(), ClientError> {
        let Some(v) = headers.get(SESSION_ID) else {
            return Ok(());
        };
        if v.is_empty() || v.as_bytes().iter().any(|b| !(0x21..=0x7e).contains(b)) {
            return Err(ClientError::Protocol(
                "the server sent an Mcp-Session-Id that is not visible ASCII".into(),
            ));
        }
        if let Ok(mut s) = self.session.lock()
            && s.id.as_ref() != Some(v)
        {
            if s.id.is_some() {
                tracing::debug!("the server re-minted the session id");
            }
            s.id = Some(v.clone());
        }
        Ok(())
    }

    /// POSTs a request and returns its answer. `headers` are the 2026-07-28 headers (none on
    /// the handshake revisions, whose headers come from the session). `sessions` says whether
    /// an `Mcp-Session-Id` in the answer is taken.
    pub(crate) async fn post_request(
        self: &Arc<Self>,
        id: &RequestId,
        body: Vec<u8>,
        headers: HeaderMap,
        sessions: bool,
    ) -> Result<Exchange, ClientError> {
        let (rx, _waiting) = self.core.pending(id);
        self.post_inner(id, rx, body, headers, sessions).await
    }

    async fn post_inner(
        self: &Arc<Self>,
        id: &RequestId,
        mut rx: oneshot::Receiver<Answer>,
        body: Vec<u8>,
        mut headers: HeaderMap,
        sessions: bool,
    ) -> Result<Exchange, ClientError> {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        let resp = self.send(Method::POST, headers, Bytes::from(body)).await?;
        let status = resp.status().as_u16();
        if sessions {
            self.track_session(resp.headers())?;
        }
        let stream = is_event_stream(resp.headers());
        let body = resp.into_body();
        if !(200..300).contains(&status) {
            let bytes = read_body(body, MAX_ERROR_BODY).await.unwrap_or_default();
            return Ok(Exchange {
                status,
                body: match parse_message(&bytes) {
                    Msg::Response { id: rid, answer }
                        if rid.is_none() || rid.as_ref() == Some(id) =>
                    {
                        Body::Response(answer)
                    }
                    _ => Body::Other(clip(&String::from_utf8_lossy(&bytes))),
                },
            });
        }
        if stream {
            return self.follow_stream(id, rx, status, body).await;
        }
        let limit = self.core.limits.max_body;
        let bytes = read_body(body, limit).await.map_err(|e| match e {
            ReadError::TooLarge => ClientError::BodyTooLarge {
                what: format!("the response body from {}", self.url),
                limit,
            },
            ReadError::Broken(e) => self.network(e),
        })?;
        if bytes.trim_ascii().is_empty() {
            return Ok(Exchange {
                status,
                body: Body::Other(String::new()),
            });
        }
        for msg in json_messages(&bytes) {
            if let Some(answer) = self.handle(parse_message(&msg), Some(id)) {
                answer.await;
            }
        }
        Ok(Exchange {
            status,
            body: match rx.try_recv() {
                Ok(answer) => Body::Response(answer),
                Err(_) => Body::Other(clip(&String::from_utf8_lossy(&bytes))),
            },
        })
    }

    /// Reads a request's event stream until its response, resuming it when it drops early
    /// (handshake revisions: a stream with event ids).
    async fn follow_stream(
        self: &Arc<Self>,
        id: &RequestId,
        mut rx: oneshot::Receiver<Answer>,
        status: u16,
        body: Incoming,
    ) -> Result<Exchange, ClientError> {
        let limits = self.core.limits;
        let mut parser = Parser::new(limits.max_event);
        let mut backoff = Backoff::new(limits.reconnect);
        let mut body = Some(body);
        // Whether the stream being read is a reopening (counted by the backoff).
        let mut reopened = false;
        loop {
            if let Some(b) = body.take() {
                let opened = Instant::now();
                let mut answering = Answering::new();
                let mut pump = Box::pin(self.pump(b, &mut parser, Some(id), &mut answering));
                let pumped = tokio::select! {
                    answer = &mut rx => {
                        drop(pump);
                        // The questions the server asked before its answer are answered
                        // first (it may still read them).
                        while answering.next().await.is_some() {}
                        return match answer {
                            Ok(a) => Ok(Exchange { status, body: Body::Response(a) }),
                            Err(_) => Err(self.core.closed_error()),
                        };
                    }
                    pumped = &mut pump => pumped,
                };
                match pumped.end {
                    Err(ReadError::TooLarge) => {
                        return Err(ClientError::EventTooLarge {
                            limit: limits.max_event,
                        });
                    }
                    Err(ReadError::Broken(e)) => {
                        tracing::debug!("the event stream of request {id} broke: {e}");
                    }
                    Ok(()) => {}
                }
                if reopened {
                    backoff.ended(opened.elapsed(), pumped.messages);
                }
            }
            if let Ok(a) = rx.try_recv() {
                return Ok(Exchange {
                    status,
                    body: Body::Response(a),
                });
            }
            // The stream ended before the response: resume it (handshake revisions only; a
            // 2026-07-28 stream carries no event ids).
            let Some(last) = parser.last_id.clone() else {
                return Err(ClientError::Protocol(format!(
                    "the event stream of request {id} ended before its response"
                )));
            };
            if backoff.exhausted() {
                return Err(ClientError::StreamLost {
                    attempts: backoff.failures(),
                });
            }
            if !reopened {
                // A gateway relaying this request ends its own stream in turn (SSE polling).
                self.core.stream_ended(id);
            }
            let wait = backoff.delay(parser.retry_ms);
            tracing::debug!(%id, last_event_id = %last, ?wait, "resuming a dropped event stream");
            tokio::time::sleep(wait).await;
            reopened = true;
            match self.open_get(Some(&last)).await {
                Ok(Some(b)) => body = Some(b),
                Ok(None) => {
                    return Err(ClientError::Protocol(format!(
                        "the event stream of request {id} dropped and the server refused to resume it"
                    )));
                }
                // Unreachable for now (a server restarting): try again later.
                Err(ClientError::Network { message, .. }) => {
                    tracing::debug!(%id, "could not resume the event stream: {message}");
                    backoff.failed();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// GETs the endpoint's event stream (resuming after `last_event_id` when given); `None`
    /// when the server offers none.
    async fn open_get(&self, last_event_id: Option<&str>) -> Result<Option<Incoming>, ClientError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(last) = last_event_id {
            headers.insert(
                HeaderName::from_static("last-event-id"),
                header_value("Last-Event-ID", last)?,
            );
        }
        let resp = self.send(Method::GET, headers, Bytes::new()).await?;
        if resp.status() != StatusCode::OK || !is_event_stream(resp.headers()) {
            tracing::debug!(status = %resp.status(), "the server offers no GET event stream");
            return Ok(None);
        }
        Ok(Some(resp.into_body()))
    }

    /// Opens the standalone GET stream, when the server offers one, and keeps reading it:
    /// a dropped stream is reopened (with backoff) until too many reopenings in a row fail;
    /// then, or when an event is over the limit, the notification streams end with why.
    pub(crate) async fn start_get_stream(self: &Arc<Self>) {
        let body = match self.open_get(None).await {
            Ok(Some(body)) => body,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("no standalone event stream: {e}");
                return;
            }
        };
        let this = Arc::clone(self);
        let task = tokio::spawn(async move {
            let limits = this.core.limits;
            let mut parser = Parser::new(limits.max_event);
            let mut backoff = Backoff::new(limits.reconnect);
            let mut body = Some(body);
            let mut reopened = false;
            loop {
                if let Some(b) = body.take() {
                    let opened = Instant::now();
                    let mut answering = Answering::new();
                    let pumped = this.pump(b, &mut parser, None, &mut answering).await;
                    match pumped.end {
                        Err(ReadError::TooLarge) => {
                            let limit = limits.max_event;
                            tracing::warn!(
                                "the server sent an event over {limit} bytes on the standalone event stream: giving it up"
                            );
                            this.core.end_subscribers(&Ended::EventTooLarge { limit });
                            return;
                        }
                        Err(ReadError::Broken(e)) => {
                            tracing::debug!("the standalone event stream broke: {e}");
                        }
                        Ok(()) => {}
                    }
                    if reopened {
                        backoff.ended(opened.elapsed(), pumped.messages);
                    }
                }
                if backoff.exhausted() {
                    let attempts = backoff.failures();
                    tracing::warn!(
                        "giving up on the standalone event stream after {attempts} failed reopenings"
                    );
                    this.core.end_subscribers(&Ended::StreamLost { attempts });
                    return;
                }
                tokio::time::sleep(backoff.delay(parser.retry_ms)).await;
                reopened = true;
                match this.open_get(parser.last_id.clone().as_deref()).await {
                    Ok(Some(b)) => body = Some(b),
                    Ok(None) => backoff.failed(),
                    Err(e) => {
                        tracing::debug!("could not reopen the standalone event stream: {e}");
                        backoff.failed();
                    }
                }
            }
        });
        if let Ok(mut g) = self.get_stream.lock() {
            *g = Some(AbortOnDrop(task));
        }
    }

    /// Stops reading the standalone GET stream.
    pub(crate) fn stop_get_stream(&self) {
        if let Ok(mut g) = self.get_stream.lock() {
            g.take();
        }
    }

    /// Reads events until the stream ends, routing each message; counts the messages. The
    /// server's requests are answered while the stream goes on being read: a question that
    /// waits for a person (a gateway's, relaying it) does not hold up the ones after it.
    async fn pump<'a>(
        &'a self,
        mut body: Incoming,
        parser: &mut Parser,
        current: Option<&'a RequestId>,
        answering: &mut Answering<'a>,
    ) -> Pumped {
        let mut messages = 0;
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                Some(()) = answering.next(), if !answering.is_empty() => continue,
            };
            let Some(frame) = frame else { break };
            let data = match frame {
                Ok(frame) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
                Err(e) => {
                    return Pumped {
                        messages,
                        end: Err(ReadError::Broken(e.to_string())),
                    };
                }
            };
            let events = match parser.feed(&data) {
                Ok(events) => events,
                Err(TooLarge) => {
                    return Pumped {
                        messages,
                        end: Err(ReadError::TooLarge),
                    };
                }
            };
            for event in events {
                if event.data.trim().is_empty() {
                    continue;
                }
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                messages += 1;
                if let Some(answer) = self.handle(parse_message(event.data.as_bytes()), current) {
                    answering.push(Box::pin(answer));
                }
            }
        }
        while answering.next().await.is_some() {}
        Pumped {
            messages,
            end: Ok(()),
        }
    }

    /// Routes one message; a request of the server comes back as the future that answers it
    /// with the registered handlers (at most `max_server_requests` at once; one more is
    /// answered with an error).
    fn handle<'a>(
        &'a self,
        msg: Msg,
        current: Option<&'a RequestId>,
    ) -> Option<impl Future<Output = ()> + Send + 'a> {
        let (rid, method, params) = self.core.route(msg, current)?;
        Some(async move {
            tracing::debug!(%rid, %method, "request from the server");
            let outcome = self
                .core
                .answer_server_request(&method, params.as_deref(), current)
                .await;
            let body = response_body(&rid, &outcome);
            if let Err(e) = self.post_message(body).await {
                tracing::warn!(%method, "could not answer the server's request: {e}");
            }
        })
    }

    /// POSTs a notification or a response: no answer is expected beyond a 2xx status.
    pub(crate) async fn post_message(&self, body: Vec<u8>) -> Result<u16, ClientError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        let resp = self.send(Method::POST, headers, Bytes::from(body)).await?;
        let status = resp.status().as_u16();
        let bytes = read_body(resp.into_body(), MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        if !(200..300).contains(&status) {
            return Err(ClientError::Http {
                status,
                body: clip(&String::from_utf8_lossy(&bytes)),
            });
        }
        Ok(status)
    }

    /// Ends the session with DELETE (the server may refuse with 405).
    pub(crate) async fn delete_session(&self) {
        if !self.has_session() {
            return;
        }
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        match self.send(Method::DELETE, headers, Bytes::new()).await {
            Ok(resp) => tracing::debug!(status = %resp.status(), "session ended"),
            Err(e) => tracing::debug!("DELETE failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::fake::{Reply, Seen, Step, builder, fake, legacy};
    use crate::protocol::types::Root;

    #[test]
    fn control_bytes_are_refused() {
        assert!(header_value("Mcp-Method", "tools/list").is_ok());
        assert!(header_value("Mcp-Method", "tools/\nlist").is_err());
        assert!(header_value("Mcp-Method", "tools\u{7f}").is_err());
        assert!(header_value("Mcp-Method", "outils/é").is_err());
    }

    #[test]
    fn batches_are_split() {
        assert_eq!(json_messages(br#"[{"a":1},{"b":2}]"#).len(), 2);
        assert_eq!(json_messages(br#"{"a":1}"#).len(), 1);
    }

    #[tokio::test]
    async fn a_request_of_the_server_on_the_call_stream_is_answered_on_the_session() {
        let f = fake(legacy(Some("s1"), |s: &Seen| {
            Reply::Events(vec![
                Step::Message(json!({"jsonrpc": "2.0", "id": "q1", "method": "roots/list"})),
                Step::Message(json!({"jsonrpc": "2.0", "id": s.id(),
                    "result": {"content": [{"type": "text", "text": "ok"}]}})),
            ])
        }))
        .await;
        let client = builder()
            .roots(vec![
                serde_json::from_value::<Root>(json!({"uri": "file:///w"})).unwrap(),
            ])
            .connect(&f.url)
            .await
            .unwrap();
        let out = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(out.content[0].as_text(), Some("ok"));
        // The answer is POSTed with the session's headers, before the call's response.
        let answer = f
            .posts()
            .into_iter()
            .find(|s| s.body.get("result").is_some())
            .unwrap();
        assert_eq!(
            answer.body,
            json!({"jsonrpc": "2.0", "id": "q1", "result": {"roots": [{"uri": "file:///w"}]}})
        );
        assert_eq!(answer.header("mcp-session-id"), Some("s1"));
        assert_eq!(answer.header("mcp-protocol-version"), Some("2025-11-25"));
    }

    #[tokio::test]
    async fn a_session_id_that_is_not_visible_ascii_is_refused() {
        let f = fake(legacy(Some("bad id"), |s| Reply::result(s, json!({})))).await;
        let err = builder().connect(&f.url).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: the server sent an Mcp-Session-Id that is not visible ASCII"
        );
    }
}
