//! Handshake sessions (2025-11-25, 2025-06-18, 2025-03-26): `initialize`, then requests that
//! carry `Mcp-Session-Id` (and `MCP-Protocol-Version` from 2025-06-18 on), each reply validated
//! against the negotiated revision's schema.

use serde_json::{Value, json};

use crate::http::{Reply, Req, Stream, Wire};

/// The handshake revisions, newest first.
pub const LEGACY: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The revision string a server negotiated, as one of the served ones.
pub fn served(revision: &str) -> &'static str {
    LEGACY
        .into_iter()
        .find(|r| *r == revision)
        .unwrap_or_else(|| panic!("the server negotiated {revision:?}, which it does not serve"))
}

/// `initialize` params offering `version` with client `capabilities`.
pub fn initialize_params(version: &str, capabilities: Value) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "wire-tests", "version": "1.0.0"},
    })
}

/// A handshake session: its id and revision, and requests that carry them.
#[derive(Clone, Debug)]
pub struct Session<'w> {
    /// The server.
    pub wire: &'w Wire,
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated revision: replies are validated against its schema.
    pub revision: &'static str,
}

impl Wire {
    /// Opens a handshake session at `revision` with the given client capabilities, and
    /// sends `notifications/initialized`.
    pub async fn handshake(&self, revision: &'static str, capabilities: Value) -> Handshake {
        self.handshake_with(revision, capabilities, |r| r).await
    }

    /// [`Wire::handshake`] with a hook on the requests (extensions, headers).
    pub async fn handshake_with(
        &self,
        revision: &'static str,
        capabilities: Value,
        hook: impl Fn(Req) -> Req,
    ) -> Handshake {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision,
            "capabilities": capabilities,
            "clientInfo": {"name": "wire-tests", "version": "1.0.0"},
        }});
        let reply = self
            .send_as(
                revision,
                hook(Req::post(serde_json::to_vec(&body).unwrap())),
            )
            .await;
        assert_eq!(reply.json(200)["result"]["protocolVersion"], revision);
        let session = Handshake {
            id: reply
                .header("mcp-session-id")
                .expect("a session id")
                .to_owned(),
            revision,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.send_as(
            revision,
            hook(Req::in_session(
                &session,
                serde_json::to_vec(&initialized).unwrap(),
            )),
        )
        .await
        .assert_accepted();
        session
    }

    /// `initialize` offering `version` with client `capabilities`. Returns the reply,
    /// validated against the revision the server chose, and the session it opened.
    pub async fn initialize(&self, version: &str, capabilities: Value) -> (Reply, Session<'_>) {
        let req = Req::legacy(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": initialize_params(version, capabilities),
        }));
        let reply = self.send_unchecked(req.clone()).await;
        let result = &reply.json(200)["result"];
        let revision = served(result["protocolVersion"].as_str().expect("protocolVersion"));
        reply.validate(revision, &req);
        let id = reply
            .session_id()
            .expect("the InitializeResult carries Mcp-Session-Id")
            .to_owned();
        (
            reply,
            Session {
                wire: self,
                id,
                revision,
            },
        )
    }

    /// A session at `version` (which must be served) with `capabilities`, after
    /// `notifications/initialized`.
    pub async fn session(&self, version: &str, capabilities: Value) -> Session<'_> {
        let (_, session) = self.initialize(version, capabilities).await;
        assert_eq!(
            session.revision, version,
            "the server negotiated another revision"
        );
        session
            .notify("notifications/initialized", Value::Null)
            .await
            .assert_accepted();
        session
    }
}

impl<'w> Session<'w> {
    /// The same session under another id (a re-minted one).
    pub fn with_id(&self, id: &str) -> Session<'w> {
        Session {
            id: id.to_owned(),
            ..self.clone()
        }
    }

    /// Adds this session's `Mcp-Session-Id` and `MCP-Protocol-Version` to a request.
    pub fn headers(&self, req: Req) -> Req {
        req.header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", self.revision)
    }

    /// A POST of `body` inside the session.
    pub fn post(&self, body: Value) -> Req {
        self.headers(Req::legacy(body))
    }

    /// A request inside the session; `params` null means none.
    pub fn request(&self, id: impl Into<Value>, method: &str, params: Value) -> Req {
        let mut body = json!({"jsonrpc": "2.0", "id": id.into(), "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        self.post(body)
    }

    /// Sends a request of the session, validated against its revision.
    pub async fn send(&self, req: Req) -> Reply {
        self.wire.send_as(self.revision, req).await
    }

    /// Sends a request inside the session and returns the validated reply.
    pub async fn rpc(&self, id: impl Into<Value>, method: &str, params: Value) -> Reply {
        self.send(self.request(id, method, params)).await
    }

    /// Calls a tool and returns the validated reply.
    pub async fn call(&self, id: impl Into<Value>, name: &str, arguments: Value) -> Reply {
        self.rpc(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// Calls a tool and reads the answer as it streams.
    pub async fn call_streaming(
        &self,
        id: impl Into<Value>,
        name: &str,
        arguments: Value,
    ) -> Stream {
        self.open(self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        ))
        .await
    }

    /// Sends a notification inside the session.
    pub async fn notify(&self, method: &str, params: Value) -> Reply {
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        self.send(self.post(body)).await
    }

    /// POSTs the client's answer to a server request.
    pub async fn answer(&self, id: &Value, result: Value) -> Reply {
        self.send(self.post(json!({"jsonrpc": "2.0", "id": id, "result": result})))
            .await
    }

    /// Starts a streaming exchange inside the session.
    pub async fn open(&self, req: Req) -> Stream {
        self.wire.open_as(self.revision, req).await
    }

    /// Opens the session's standalone GET stream.
    pub async fn get(&self) -> Stream {
        let stream = self.open(self.headers(Req::get())).await;
        stream.assert_sse();
        stream
    }

    /// Resumes a response stream after `last_event_id`; results answer `method`.
    pub async fn resume(&self, last_event_id: &str, method: &str) -> Stream {
        let stream = self
            .open(
                self.headers(Req::get())
                    .header("last-event-id", last_event_id),
            )
            .await
            .answering(method);
        stream.assert_sse();
        stream
    }

    /// DELETEs the session.
    pub async fn delete(&self) -> Reply {
        self.send(self.headers(Req::delete())).await
    }
}

/// A handshake session: its id and revision.
#[derive(Clone, Debug)]
pub struct Handshake {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated revision.
    pub revision: &'static str,
}
