//! What sake's own fuzz targets (`fuzz/`) and micro-benchmarks (`benches/micro`) reach inside
//! the runtime. Compiled only with the `internals` feature; not an API: it changes without
//! notice. With the feature on, the `protocol`, `transport` and `uri_template` modules are
//! public too.

use std::borrow::Cow;
use std::time::Duration;

use http::HeaderMap;
use serde_json::value::RawValue;

use crate::handler::input::{Mrtr, RoundKey};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::meta::Params;
use crate::protocol::types::ClientCapabilities;
use crate::server::session::{Session, Sessions, now_secs};
use crate::signing::Signer;

/// Whether the endpoint serves a request with these headers and params statelessly
/// (2026-07-28) rather than as part of a handshake session (2026-07-28 "Backward Compatibility" of the versioning page).
pub fn is_stateless(headers: &HeaderMap, params: &Params<'_>) -> bool {
    crate::server::front::routing::is_stateless(headers, params)
}

/// Session ids and `requestState` under one key, as a server holding that key mints and
/// checks them.
#[derive(Debug)]
pub struct Keys {
    sessions: Sessions,
}

fn round_key(name: &str, arguments: Option<&RawValue>, principal: Option<&str>) -> RoundKey {
    RoundKey {
        method: "tools/call",
        name: Cow::Owned(name.to_owned()),
        arguments: arguments.map(|a| bytes::Bytes::copy_from_slice(a.get().as_bytes())),
        principal: principal.map(str::to_owned),
    }
}

impl Keys {
    /// Keys signing with `key`; `None` for an empty key.
    pub fn new(key: &[u8]) -> Option<Keys> {
        let sessions = Sessions::new(
            Signer::new(key)?,
            Duration::from_secs(3600),
            Duration::from_secs(600),
            16,
            16,
        );
        Some(Keys { sessions })
    }

    /// A fresh session id of a handshake session at `revision`.
    pub fn mint_session(&self, revision: Revision) -> Option<String> {
        let session = Session::new(revision, ClientCapabilities::default(), None)?;
        Some(self.sessions.mint(&session))
    }

    /// Whether the endpoint would accept `token` as a session id.
    pub fn verify_session(&self, token: &str) -> bool {
        self.sessions.verify_at(token, now_secs()).is_ok()
    }

    /// The `requestState` a `tools/call` of `name` with `arguments`, by `principal`, gets
    /// after a round whose `inputResponses` were `answers`.
    pub fn mint_request_state(
        &self,
        name: &str,
        arguments: Option<&RawValue>,
        principal: Option<&str>,
        answers: Option<&RawValue>,
    ) -> Result<String, RpcError> {
        let signer = self.sessions.signer();
        let round = Mrtr::start(signer, round_key(name, arguments, principal), None, answers)?;
        Ok(round.next_state(signer, Duration::from_secs(600)))
    }

    /// Whether a retry of that call carrying `state` (raw JSON, as in `params`) is accepted.
    pub fn verify_request_state(
        &self,
        state: &RawValue,
        name: &str,
        arguments: Option<&RawValue>,
        principal: Option<&str>,
    ) -> bool {
        let key = round_key(name, arguments, principal);
        Mrtr::start(self.sessions.signer(), key, Some(state), None).is_ok()
    }
}
