//! JSON-RPC decoding, `params`, the 2026-07-28 `_meta`, and the era classification of a POST.
//!
//! Input: an optional first line `MCP-Protocol-Version: <value>` (the version header), then
//! the body. Properties: nothing panics; every error the endpoint would send is a well-formed
//! JSON-RPC error with a 4xx or 200 status; a request whose `_meta` passes the 2026-07-28
//! checks is always classified as modern; ids survive a round trip.
#![no_main]

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use sake_runtime::protocol::jsonrpc::{self, DecodeError, Incoming, RequestId, RpcError};
use sake_runtime::protocol::meta::{self, Params};
use sake_runtime::protocol::methods::Method;
use sake_runtime::protocol::{Era, Revision};
use serde_json::Value;
use serde_json::value::RawValue;

const HEADER: &[u8] = b"MCP-Protocol-Version: ";

fuzz_target!(|data: &[u8]| {
    let mut headers = HeaderMap::new();
    let mut body = data;
    if let Some(rest) = data.strip_prefix(HEADER) {
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        if let Ok(v) = HeaderValue::from_bytes(&rest[..end]) {
            headers.insert("mcp-protocol-version", v);
        }
        body = rest.get(end + 1..).unwrap_or_default();
    }
    message(&headers, jsonrpc::decode(body));
    // A batch: each element decoded on its own, as the 2025-03-26 path does.
    if let Ok(items) = serde_json::from_slice::<Vec<&RawValue>>(body) {
        for raw in items.iter().take(64) {
            message(&headers, jsonrpc::decode_raw(raw));
        }
    }
});

fn message(headers: &HeaderMap, decoded: Result<Incoming<'_>, DecodeError>) {
    match decoded {
        Err(e) => {
            assert!(matches!(e.error.code, -32700 | -32600), "{:?}", e.error);
            well_formed_error(e.id.as_ref(), &e.error);
        }
        Ok(Incoming::Request { id, method, params }) => {
            id_round_trips(&id);
            for era in [Era::Modern, Era::Legacy] {
                let _ = Method::parse_in(&method, era);
            }
            let params = match Params::parse(params) {
                Ok(p) => p,
                Err(e) => {
                    assert_eq!(e.code, -32602);
                    well_formed_error(Some(&id), &e);
                    return;
                }
            };
            let modern = sake_runtime::internals::is_stateless(headers, &params);
            match meta::parse_modern_meta(params.meta) {
                Ok(m) => {
                    assert!(modern, "a valid 2026-07-28 _meta classified as legacy");
                    let _ = Revision::parse(&m.protocol_version);
                }
                Err(e) => {
                    assert_eq!(e.code, -32602);
                    assert_eq!(e.http_status(Era::Modern), 400);
                    well_formed_error(Some(&id), &e);
                }
            }
            for field in [params.name, params.uri, params.cursor, params.level]
                .into_iter()
                .flatten()
            {
                let _ = jsonrpc::raw_string(field);
            }
            let ok: Value = serde_json::from_slice(&jsonrpc::result_bytes(&id, b"{}"))
                .expect("a result response is JSON");
            assert_eq!(ok["jsonrpc"], "2.0");
        }
        Ok(Incoming::Notification { method, params }) => {
            let _ = Method::parse_in(&method, Era::Legacy);
            let _ = Params::parse(params);
        }
        Ok(Incoming::Response { id, outcome }) => {
            id_round_trips(&id);
            let raw = match outcome {
                Ok(r) | Err(r) => r,
            };
            // Raw, not parsed: serde_json's `RawValue` accepts a lone surrogate escape
            // (`"\uDBF0"`) that `Value` refuses, so only check that something is there.
            assert!(!raw.get().is_empty());
        }
    }
}

fn id_round_trips(id: &RequestId) {
    let text = serde_json::to_string(id).expect("an id serializes");
    let back: RequestId = serde_json::from_str(&text).expect("an id reads back");
    assert_eq!(&back, id);
}

/// The error body the endpoint sends: JSON-RPC 2.0, an integer code, a string message, the
/// id echoed when known, and a status the transport can send.
fn well_formed_error(id: Option<&RequestId>, err: &RpcError) {
    let bytes = jsonrpc::error_bytes(id, err);
    let v: Value = serde_json::from_slice(&bytes).expect("an error response is JSON");
    assert_eq!(v["jsonrpc"], "2.0");
    assert!(v["error"]["code"].is_i64());
    assert!(v["error"]["message"].is_string());
    if let Some(id) = id {
        assert_eq!(v["id"], serde_json::to_value(id).expect("an id serializes"));
    }
    for era in [Era::Modern, Era::Legacy] {
        let status = err.http_status(era);
        assert!(status == 200 || (400..500).contains(&status), "{status}");
    }
}
