//! Expected JSON-RPC payloads, written whole: tests compare replies with `==`.

use serde_json::{Value, json};

use crate::http::{CLIENT_CAPABILITIES, SERVER_INFO};

/// A successful response.
pub fn ok(id: impl Into<Value>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "result": result})
}

/// An error response; `data` only when given.
pub fn err(id: impl Into<Value>, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(d) = data {
        error["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id.into(), "error": error})
}

/// The `_meta` a server puts on every result: its name and version.
pub fn server_meta(name: &str, version: &str) -> Value {
    json!({SERVER_INFO: {"name": name, "version": version}})
}

/// `{"resultType":"complete", "_meta": server_meta, …fields}`.
pub fn complete(server: (&str, &str), fields: Value) -> Value {
    let mut r = json!({"resultType": "complete", "_meta": server_meta(server.0, server.1)});
    r.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    r
}

/// A `tools/call` result of one text block.
pub fn text_result(server: (&str, &str), text: &str) -> Value {
    complete(server, json!({"content": [{"type": "text", "text": text}]}))
}

/// `params` whose `_meta` declares exactly these client capabilities (the rest of the
/// default `_meta` is merged in by [`crate::Req::modern`]).
pub fn with_caps(params: Value, caps: Value) -> Value {
    let mut params = params;
    let obj = params.as_object_mut().expect("params are an object");
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    meta[CLIENT_CAPABILITIES] = caps;
    params
}

/// `a` with the members of `b` added (replacing same-named ones).
pub fn merged(a: Value, b: Value) -> Value {
    let mut a = a;
    a.as_object_mut()
        .unwrap()
        .extend(b.as_object().unwrap().clone());
    a
}
