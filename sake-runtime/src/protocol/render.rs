//! The rendering step: shapes listings, results and errors for the revision a request speaks.
//!
//! Everything is built in its 2026-07-28 form; this module drops or moves what an older
//! revision does not define. It is the one place, with the revision table in `version.rs`,
//! that knows how revisions differ on the wire.

use serde::Serialize;
use serde_json::{Map, Value};

use super::jsonrpc::{RpcError, code};
use super::types::{
    CallToolResult, Content, Implementation, Prompt, Resource, ResourceTemplate, Tool,
};
use super::version::{Features, Revision};

/// Caching hints (`ttlMs`, `cacheScope`) of 2026-07-28 list and read results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheHints {
    /// Freshness in milliseconds.
    pub ttl_ms: u64,
    /// Whether results may be shared across users (`public`) or not (`private`).
    pub scope: CacheScope,
}

/// `cacheScope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CacheScope {
    /// No user-specific data; shareable.
    Public,
    /// Reuse only within the same authorization context.
    Private,
}

impl CacheScope {
    fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// What the renderer needs to know about the server, serialised once at start-up.
#[derive(Clone, Debug)]
pub struct ResultEnv {
    /// By revision: `,"_meta":{"io.modelcontextprotocol/serverInfo":{...}}` where results
    /// carry the server's info (empty elsewhere).
    server_info_meta: [Vec<u8>; Revision::COUNT],
    /// By revision: the server's info as that revision shows it.
    server_info: [Value; Revision::COUNT],
    /// Hints for list and read results.
    pub cache: CacheHints,
}

impl ResultEnv {
    /// Prepares the rendering of results for a server.
    pub fn new(server_info: &Implementation, cache: CacheHints) -> Self {
        let mut infos: [Value; Revision::COUNT] = Default::default();
        let mut metas: [Vec<u8>; Revision::COUNT] = Default::default();
        for rev in Revision::ALL {
            if !rev.features().server_info_meta {
                continue;
            }
            let info = implementation(server_info, rev);
            let meta = &mut metas[rev.index()];
            meta.extend_from_slice(br#","_meta":{"io.modelcontextprotocol/serverInfo":"#);
            meta.extend_from_slice(&serde_json::to_vec(&info).unwrap_or_default());
            meta.extend_from_slice(b"}");
            infos[rev.index()] = info;
        }
        ResultEnv {
            server_info_meta: metas,
            server_info: infos,
            cache,
        }
    }

    fn info(&self, rev: Revision) -> Value {
        self.server_info[rev.index()].clone()
    }
}

/// Whether a result carries caching hints on 2026-07-28.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// `server/discover`, lists, `resources/read`.
    Cacheable,
    /// Everything else.
    None,
}

/// The kind of result being rendered, for what older revisions drop from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `tools/call`.
    CallTool,
    /// `prompts/get`.
    GetPrompt,
    /// `resources/read`.
    ReadResource,
    /// Anything whose fields every revision shares.
    Plain,
}

/// Renders a result object for `rev`: `resultType`, caching hints and `serverInfo` on
/// 2026-07-28; the revision's own shape before.
pub fn result<T: Serialize + ?Sized>(
    rev: Revision,
    env: &ResultEnv,
    shape: Shape,
    cache: Cache,
    body: &T,
) -> Vec<u8> {
    let f = rev.features();
    if f.result_type {
        // One buffer: the fields sake adds, then the body serialised after them with its
        // opening brace turned into a comma.
        let mut out = Vec::with_capacity(256 + env.server_info_meta[rev.index()].len());
        modern_fields(env, rev, cache, &mut out);
        let start = out.len();
        match serde_json::to_writer(&mut out, body) {
            Ok(()) if !has_top_level_meta(&out[start..]) => {
                // `body` is a JSON object: `{}` or `{"k":...}`.
                if out.len() - start > 2 {
                    out[start] = b',';
                } else {
                    out.truncate(start);
                    out.push(b'}');
                }
                out
            }
            _ => {
                let value = serde_json::to_value(body).unwrap_or(Value::Object(Map::new()));
                modern_value(env, rev, cache, value)
            }
        }
    } else {
        // Most results have nothing this revision lacks: their bytes are final as serialised.
        // Only those naming a field the revision drops or rewrites go through a `Value`.
        let mut out = Vec::with_capacity(256);
        if serde_json::to_writer(&mut out, body).is_ok() && !needs_shaping(f, shape, &out) {
            return out;
        }
        let mut value = serde_json::to_value(body).unwrap_or(Value::Object(Map::new()));
        legacy_shape(f, shape, &mut value);
        serde_json::to_vec(&value).unwrap_or_else(|_| b"{}".to_vec())
    }
}

/// Renders a tool's result for `rev`: [`result`] with [`Shape::CallTool`], but when its types
/// show it has nothing a handshake revision drops or rewrites (no structured content; text,
/// image and audio blocks whose annotations the revision has), the serialised bytes are not
/// searched for it.
pub fn tool_result(rev: Revision, env: &ResultEnv, cache: Cache, body: &CallToolResult) -> Vec<u8> {
    let f = rev.features();
    // 2026-07-28 drops nothing (the shape is not looked at there); before it, what
    // `legacy_shape` changes in a tool's result, read from the result's types.
    let plain = f.result_type
        || body.structured_content.is_none()
            && body.content.iter().all(|block| {
                let annotations = match block {
                    Content::Text(t) => &t.annotations,
                    Content::Image(m) | Content::Audio(m) => &m.annotations,
                    Content::ResourceLink(_) | Content::Resource(_) => return false,
                };
                f.last_modified
                    || annotations
                        .as_ref()
                        .is_none_or(|a| a.last_modified.is_none())
            });
    result(
        rev,
        env,
        if plain { Shape::Plain } else { Shape::CallTool },
        cache,
        body,
    )
}

/// Whether serialised `bytes` may hold something [`legacy_shape`] changes for this revision:
/// a key (or the `resource_link` type) it drops or rewrites, at any depth. In serialised
/// JSON a quote inside a string is escaped, so `"title":` can only be a key; a match that
/// is no concern of `legacy_shape` only costs the slower path.
fn needs_shaping(f: &Features, shape: Shape, bytes: &[u8]) -> bool {
    if !matches!(shape, Shape::CallTool | Shape::GetPrompt) {
        return false;
    }
    let mut needles: [&[u8]; 5] = [b"\"structuredContent\":", b"", b"", b"", b""];
    if !f.resource_links {
        needles[1] = b"\"resource_link\"";
    }
    if !f.icons {
        needles[2] = b"\"icons\":";
    }
    if !f.titles {
        needles[3] = b"\"title\":";
    }
    if !f.last_modified {
        needles[4] = b"\"lastModified\":";
    }
    // Only at a quote followed by a needle's first letter (`s`, `r`, `i`, `t`, `l`) is
    // there anything to compare.
    bytes.windows(2).enumerate().any(|(i, pair)| {
        pair[0] == b'"'
            && matches!(pair[1], b's' | b'r' | b'i' | b't' | b'l')
            && needles
                .iter()
                .any(|n| !n.is_empty() && bytes[i..].starts_with(n))
    })
}

/// Renders an already-built JSON object (lists and discover, built once at start-up).
pub fn result_value(rev: Revision, env: &ResultEnv, cache: Cache, value: Value) -> Vec<u8> {
    if rev.features().result_type {
        modern_value(env, rev, cache, value)
    } else {
        serde_json::to_vec(&value).unwrap_or_else(|_| b"{}".to_vec())
    }
}

/// A cheap check: serde output of our result types puts `_meta` last, at top level, only when
/// set. A false positive merely takes the slower path.
fn has_top_level_meta(bytes: &[u8]) -> bool {
    bytes.windows(8).any(|w| w == b"\"_meta\":")
}

/// `{"resultType":"complete"`, the caching hints, and `_meta` with `serverInfo`: the object
/// is left open for the body's fields.
fn modern_fields(env: &ResultEnv, rev: Revision, cache: Cache, out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"resultType":"complete""#);
    if cache == Cache::Cacheable {
        out.extend_from_slice(br#","ttlMs":"#);
        out.extend_from_slice(env.cache.ttl_ms.to_string().as_bytes());
        out.extend_from_slice(br#","cacheScope":""#);
        out.extend_from_slice(env.cache.scope.as_str().as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(&env.server_info_meta[rev.index()]);
}

fn modern_value(env: &ResultEnv, rev: Revision, cache: Cache, value: Value) -> Vec<u8> {
    let mut obj = match value {
        Value::Object(obj) => obj,
        _ => Map::new(),
    };
    let mut out = Map::with_capacity(obj.len() + 4);
    out.insert("resultType".into(), "complete".into());
    if cache == Cache::Cacheable {
        out.insert("ttlMs".into(), env.cache.ttl_ms.into());
        out.insert("cacheScope".into(), env.cache.scope.as_str().into());
    }
    let mut meta = match obj.shift_remove("_meta") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if rev.features().server_info_meta {
        meta.entry(super::meta::SERVER_INFO)
            .or_insert_with(|| env.info(rev));
    }
    out.extend(obj);
    out.insert("_meta".into(), Value::Object(meta));
    serde_json::to_vec(&out).unwrap_or_else(|_| b"{}".to_vec())
}

/// What a handshake revision drops or rewrites in a result. A rule added here for a tool's
/// result is one [`tool_result`] must know too: it skips this for the results its types say
/// have nothing of the kind (`tool_results_render_as_any_call_result` holds the two together).
fn legacy_shape(f: &Features, shape: Shape, value: &mut Value) {
    let Value::Object(obj) = value else { return };
    match shape {
        Shape::CallTool => {
            let keep_structured = f.structured_output
                && (!f.object_only_schemas
                    || obj.get("structuredContent").is_some_and(Value::is_object));
            if !keep_structured {
                obj.shift_remove("structuredContent");
            }
            if let Some(Value::Array(blocks)) = obj.get_mut("content") {
                blocks.iter_mut().for_each(|b| content_block(f, b));
            }
        }
        Shape::GetPrompt => {
            if let Some(Value::Array(messages)) = obj.get_mut("messages") {
                for m in messages {
                    if let Some(c) = m.get_mut("content") {
                        content_block(f, c);
                    }
                }
            }
        }
        Shape::ReadResource | Shape::Plain => {}
    }
}

/// Shapes one content block for a revision. A `resource_link` on 2025-03-26, which has none,
/// becomes a text block naming the link, so that nothing the tool said is lost.
fn content_block(f: &Features, block: &mut Value) {
    let Value::Object(obj) = block else { return };
    if !f.resource_links && obj.get("type").and_then(Value::as_str) == Some("resource_link") {
        let uri = obj.get("uri").and_then(Value::as_str).unwrap_or_default();
        let name = obj.get("name").and_then(Value::as_str).unwrap_or(uri);
        let text = match obj.get("description").and_then(Value::as_str) {
            Some(d) => format!("{name} <{uri}>: {d}"),
            None => format!("{name} <{uri}>"),
        };
        *block = serde_json::json!({ "type": "text", "text": text });
        return;
    }
    strip_listing(f, obj);
    if let Some(Value::Object(res)) = obj.get_mut("resource") {
        strip_listing(f, res);
    }
}

/// Drops the fields of a listed object (tool, prompt, resource, block) a revision lacks.
fn strip_listing(f: &Features, obj: &mut Map<String, Value>) {
    if !f.icons {
        obj.shift_remove("icons");
    }
    if !f.titles {
        obj.shift_remove("title");
    }
    if !f.last_modified
        && let Some(Value::Object(a)) = obj.get_mut("annotations")
    {
        a.shift_remove("lastModified");
    }
}

/// A tool as `rev` lists it.
pub fn tool(t: &Tool, rev: Revision) -> Value {
    let f = rev.features();
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    let Value::Object(obj) = &mut v else { return v };
    if !f.titles {
        // 2025-03-26 has no top-level title; its tools keep one in `annotations.title`.
        if let Some(title) = obj.shift_remove("title") {
            let ann = obj
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(ann) = ann {
                ann.entry("title").or_insert(title);
            }
        }
    }
    if !f.structured_output {
        obj.shift_remove("outputSchema");
    }
    strip_listing(f, obj);
    v
}

/// A prompt as `rev` lists it.
pub fn prompt(p: &Prompt, rev: Revision) -> Value {
    let f = rev.features();
    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
    if let Value::Object(obj) = &mut v {
        strip_listing(f, obj);
        if let Some(Value::Array(args)) = obj.get_mut("arguments") {
            for a in args {
                if let Value::Object(a) = a {
                    strip_listing(f, a);
                }
            }
        }
    }
    v
}

/// A resource as `rev` lists it.
pub fn resource(r: &Resource, rev: Revision) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Value::Object(obj) = &mut v {
        strip_listing(rev.features(), obj);
    }
    v
}

/// A resource template as `rev` lists it.
pub fn template(t: &ResourceTemplate, rev: Revision) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    if let Value::Object(obj) = &mut v {
        strip_listing(rev.features(), obj);
    }
    v
}

/// An `Implementation` (serverInfo) as `rev` shows it.
pub fn implementation(i: &Implementation, rev: Revision) -> Value {
    let f = rev.features();
    let mut v = serde_json::to_value(i).unwrap_or(Value::Null);
    if let Value::Object(obj) = &mut v {
        if !f.icons {
            obj.shift_remove("icons");
            obj.shift_remove("description");
            obj.shift_remove("websiteUrl");
        }
        if !f.titles {
            obj.shift_remove("title");
        }
    }
    v
}

/// Adapts an error to a revision: "resource not found" is -32002 before 2026-07-28 and
/// -32602 in it; "missing client capability" exists only in 2026-07-28.
pub fn error(rev: Revision, mut err: RpcError) -> RpcError {
    let f = rev.features();
    match err.code {
        code::RESOURCE_NOT_FOUND_LEGACY => err.code = f.resource_not_found_code,
        code::MISSING_REQUIRED_CLIENT_CAPABILITY => err.code = f.missing_capability_code,
        _ => {}
    }
    err
}

/// A `CreateTaskResult` (the tasks extension): the task, flat, with `resultType: "task"`
/// ("Servers MUST NOT set `resultType` to `\"task\"` on result types other than
/// `CreateTaskResult`") and the server's `serverInfo`.
pub fn task_created(env: &ResultEnv, rev: Revision, task: &super::tasks::Task) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("resultType".into(), "task".into());
    if let Ok(Value::Object(fields)) = serde_json::to_value(task) {
        body.extend(fields);
    }
    let mut meta = Map::new();
    meta.insert(super::meta::SERVER_INFO.into(), env.info(rev));
    body.insert("_meta".into(), Value::Object(meta));
    serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec())
}

/// An `input_required` result (2026-07-28): the questions and the signed state.
pub fn input_required(
    env: &ResultEnv,
    rev: Revision,
    requests: Vec<(String, Value)>,
    request_state: &str,
) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("resultType".into(), "input_required".into());
    body.insert(
        "inputRequests".into(),
        Value::Object(requests.into_iter().collect()),
    );
    body.insert("requestState".into(), request_state.into());
    let mut meta = Map::new();
    meta.insert(super::meta::SERVER_INFO.into(), env.info(rev));
    body.insert("_meta".into(), Value::Object(meta));
    serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::types::{CallToolResult, Content, ToolAnnotations};
    use serde_json::json;

    /// A tool's result rendered without the search of its bytes is the result rendered with
    /// it, on every revision, whatever the result holds.
    #[test]
    fn tool_results_render_as_any_call_result() {
        let bodies = [
            json!({"content": [{"type": "text", "text": "5"}]}),
            json!({"content": [{"type": "text", "text": "\"title\": no key", "_meta": {"title": 1}}], "_meta": {"icons": []}}),
            json!({"content": [{"type": "text", "text": "t", "annotations": {"priority": 0.5}}], "isError": true}),
            json!({"content": [{"type": "text", "text": "t", "annotations": {"lastModified": "2025-01-01T00:00:00Z"}}]}),
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png", "annotations": {"lastModified": "2025-01-01T00:00:00Z"}}]}),
            json!({"content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]}),
            json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a", "title": "A", "icons": []}]}),
            json!({"content": [{"type": "resource", "resource": {"uri": "u", "text": "t"}}]}),
            json!({"content": [], "structuredContent": {"n": 1}}),
            json!({"content": [], "structuredContent": [1, 2]}),
            json!({"content": []}),
        ];
        for body in &bodies {
            let parsed: CallToolResult = serde_json::from_value(body.clone()).unwrap();
            for rev in Revision::ALL {
                let searched = result(rev, &env(), Shape::CallTool, Cache::None, &parsed);
                let got = tool_result(rev, &env(), Cache::None, &parsed);
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(searched).unwrap(),
                    "{rev} {body}"
                );
            }
        }
    }

    fn env() -> ResultEnv {
        ResultEnv::new(
            &Implementation::new("srv", "1.0"),
            CacheHints {
                ttl_ms: 1000,
                scope: CacheScope::Public,
            },
        )
    }

    fn parse(b: Vec<u8>) -> Value {
        serde_json::from_slice(&b).unwrap()
    }

    /// The Value path, which every legacy result took before serialised bytes were kept.
    fn shaped(rev: Revision, shape: Shape, body: &Value) -> Vec<u8> {
        let mut value = body.clone();
        legacy_shape(rev.features(), shape, &mut value);
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn legacy_results_kept_as_serialised_are_the_shaped_ones() {
        let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a", "title": "A",
            "icons": [{"src": "https://x/i.png"}], "annotations": {"lastModified": "2025-01-01T00:00:00Z"}});
        let bodies = [
            json!({"content": [{"type": "text", "text": "plain"}]}),
            json!({"content": [{"type": "text", "text": "a \"title\": and \"icons\": in text"}]}),
            json!({"content": [link.clone()]}),
            json!({"content": [{"type": "text", "text": "t", "annotations": {"lastModified": "x", "priority": 1}}]}),
            json!({"content": [], "structuredContent": {"n": 1}}),
            json!({"content": [], "structuredContent": [1, 2]}),
            json!({"content": [{"type": "resource", "resource": {"uri": "u", "text": "t", "title": "T", "icons": []}}], "isError": true}),
            json!({"messages": [{"role": "user", "content": link}], "description": "d"}),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}),
        ];
        let mut kept = 0;
        for rev in Revision::ALL
            .into_iter()
            .filter(|r| !r.features().result_type)
        {
            for shape in [Shape::CallTool, Shape::GetPrompt, Shape::Plain] {
                for body in &bodies {
                    let mut direct = Vec::new();
                    serde_json::to_writer(&mut direct, body).unwrap();
                    if !needs_shaping(rev.features(), shape, &direct) {
                        kept += 1;
                    }
                    assert_eq!(
                        String::from_utf8(result(rev, &env(), shape, Cache::None, body)).unwrap(),
                        String::from_utf8(shaped(rev, shape, body)).unwrap(),
                        "{rev} {shape:?} {body}"
                    );
                }
            }
        }
        // Plain results, and those with nothing a revision lacks, skip the Value.
        assert_eq!(kept, 55);
    }

    #[test]
    fn modern_results_carry_result_type_server_info_and_hints() {
        let r = CallToolResult::success(vec![Content::text("x")]);
        assert_eq!(
            parse(result(
                Revision::V2026_07_28,
                &env(),
                Shape::CallTool,
                Cache::None,
                &r
            )),
            json!({"resultType": "complete",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "1.0"}},
                   "content": [{"type": "text", "text": "x"}]})
        );
        assert_eq!(
            parse(result(
                Revision::V2026_07_28,
                &env(),
                Shape::Plain,
                Cache::Cacheable,
                &json!({})
            )),
            json!({"resultType": "complete", "ttlMs": 1000, "cacheScope": "public",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "1.0"}}})
        );
    }

    #[test]
    fn a_result_meta_is_merged_with_server_info() {
        let mut r = CallToolResult::success(vec![]);
        r.meta = Some(serde_json::from_value(json!({"x": 1})).unwrap());
        assert_eq!(
            parse(result(
                Revision::V2026_07_28,
                &env(),
                Shape::CallTool,
                Cache::None,
                &r
            )),
            json!({"resultType": "complete", "content": [],
                   "_meta": {"x": 1, "io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "1.0"}}})
        );
    }

    #[test]
    fn legacy_results_drop_what_their_revision_lacks() {
        let mut r = CallToolResult::structured(&json!([1, 2])).unwrap();
        r.content.push(Content::resource_link("test://a", "a"));
        let v = parse(result(
            Revision::V2025_06_18,
            &env(),
            Shape::CallTool,
            Cache::None,
            &r,
        ));
        assert_eq!(
            v,
            json!({"content": [{"type": "text", "text": "[1,2]"},
                               {"type": "resource_link", "uri": "test://a", "name": "a"}]})
        );
        let v = parse(result(
            Revision::V2025_03_26,
            &env(),
            Shape::CallTool,
            Cache::None,
            &r,
        ));
        assert_eq!(
            v,
            json!({"content": [{"type": "text", "text": "[1,2]"}, {"type": "text", "text": "a <test://a>"}]})
        );
        let r = CallToolResult::structured(&json!({"a": 1})).unwrap();
        let v = parse(result(
            Revision::V2025_11_25,
            &env(),
            Shape::CallTool,
            Cache::None,
            &r,
        ));
        assert_eq!(v["structuredContent"], json!({"a": 1}));
    }

    #[test]
    fn titles_move_into_annotations_on_2025_03_26() {
        let t = Tool::new("t", json!({"type": "object", "properties": {}}))
            .with_title("T")
            .with_description("d")
            .with_output_schema(json!({"type": "object"}))
            .with_annotations(ToolAnnotations::default().with_read_only_hint(true));
        assert_eq!(
            tool(&t, Revision::V2025_03_26),
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {}},
                   "annotations": {"readOnlyHint": true, "title": "T"}})
        );
        assert_eq!(tool(&t, Revision::V2025_06_18)["title"], "T");
    }

    #[test]
    fn resource_not_found_changes_code_by_revision() {
        let e = RpcError::new(code::RESOURCE_NOT_FOUND_LEGACY, "nf");
        assert_eq!(error(Revision::V2026_07_28, e.clone()).code, -32602);
        assert_eq!(error(Revision::V2025_06_18, e).code, -32002);
    }
}
