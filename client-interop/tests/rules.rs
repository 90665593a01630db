//! Each discovery, fallback, memory, session and calling rule of the client, against small fake
//! servers that produce exactly the answer the rule is about.

use std::time::{Duration, Instant};

use sake::Revision;
use sake::client::{Client, ClientBuilder, ClientError, EraCache, Remembered, Subscription};
use sake::{CreateMessageResult, ElicitResult, Role, Root};
use sake_tests::fake::{
    Reply, Seen, Step, discover_result, fake, fake_with_session, initialize_result, legacy, meta,
    modern,
};
use serde_json::{Map, Value, json};

fn builder(cache: &EraCache) -> ClientBuilder {
    Client::builder()
        .info("t", "1")
        .cache(cache.clone())
        .timeout(Duration::from_secs(10))
}

// ------------------------------------------------------------------------------ fallback

/// A handshake-era fake with one tool, `t`, whose answer to `server/discover` is `discover`.
fn handshake_era(
    discover: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    let server = legacy(None, |s: &Seen| match s.method() {
        "tools/list" => Reply::result(
            s,
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        ),
        _ => Reply::error(200, s, -32601),
    });
    move |s: &Seen| match (s.http.as_str(), s.method()) {
        ("POST", "server/discover") => discover(s),
        _ => server(s),
    }
}

/// Connects to a handshake-era fake whose answer to `server/discover` is `discover`; the
/// client must fall back to `initialize` and remember the handshake revision.
async fn assert_falls_back(discover: impl Fn(&Seen) -> Reply + Send + Sync + 'static) {
    let f = fake(handshake_era(discover)).await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("falls back");
    assert_eq!(client.revision(), Revision::V2025_11_25);
    assert_eq!(
        f.methods(),
        ["server/discover", "initialize", "notifications/initialized"]
    );
    assert_eq!(
        cache.get(&f.url),
        Some(Remembered::Legacy(Revision::V2025_11_25))
    );
    // The handshake offers the newest handshake revision, with no version header.
    let init = &f.seen()[1];
    assert_eq!(
        init.body["params"],
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}})
    );
    assert_eq!(init.header("mcp-protocol-version"), None);
}

/// Connects to a fake whose answer to `server/discover` is `discover`; the client must fail,
/// send nothing else, and remember nothing.
async fn assert_fails(discover: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> ClientError {
    let f = fake(handshake_era(discover)).await;
    let cache = EraCache::new();
    let err = builder(&cache)
        .connect(&f.url)
        .await
        .expect_err("no fallback");
    assert_eq!(f.methods(), ["server/discover"]);
    assert_eq!(cache.get(&f.url), None);
    err
}

#[tokio::test]
async fn falls_back_on_method_not_found() {
    assert_falls_back(|s| Reply::error(200, s, -32601)).await;
}

#[tokio::test]
async fn falls_back_on_invalid_params() {
    assert_falls_back(|s| Reply::error(200, s, -32602)).await;
}

#[tokio::test]
async fn falls_back_on_400_without_a_json_rpc_error() {
    assert_falls_back(|_| Reply::text(400, "Bad Request: Server not initialized")).await;
}

#[tokio::test]
async fn falls_back_on_400_with_a_legacy_json_rpc_error() {
    assert_falls_back(|s| Reply::error(400, s, -32000)).await;
}

#[tokio::test]
async fn falls_back_on_404() {
    assert_falls_back(|_| Reply::text(404, "Not Found")).await;
}

#[tokio::test]
async fn falls_back_on_405() {
    assert_falls_back(|_| Reply::status(405)).await;
}

#[tokio::test]
async fn falls_back_on_415() {
    assert_falls_back(|_| Reply::text(415, "Unsupported Media Type")).await;
}

#[tokio::test]
async fn falls_back_on_422_without_json_rpc_body() {
    assert_falls_back(|_| Reply::text(422, "Unprocessable")).await;
}

#[tokio::test]
async fn falls_back_on_an_answer_that_is_no_json_rpc_error() {
    assert_falls_back(|_| Reply::Plain(200, "text/html", "<html>hello</html>".into())).await;
}

#[tokio::test]
async fn falls_back_on_a_result_that_is_no_discover_result() {
    assert_falls_back(|s| Reply::result(s, json!({}))).await;
}

#[tokio::test]
async fn falls_back_when_discover_lists_no_2026_revision() {
    assert_falls_back(|s| {
        Reply::result(
            s,
            json!({"supportedVersions": ["2025-11-25"], "capabilities": {}}),
        )
    })
    .await;
}

#[tokio::test]
async fn falls_back_on_unsupported_version_listing_only_handshake_revisions() {
    assert_falls_back(|s| {
        Reply::error_with_data(
            400,
            s,
            -32022,
            Some(json!({"supported": ["2025-06-18"], "requested": "2026-07-28"})),
        )
    })
    .await;
}

#[tokio::test]
async fn a_2026_error_in_a_400_is_no_fallback() {
    let err = assert_fails(|s| Reply::error(400, s, -32020)).await;
    assert_eq!(err.rpc().map(|e| e.code), Some(-32020));
    let err = assert_fails(|s| Reply::error(400, s, -32021)).await;
    assert_eq!(err.rpc().map(|e| e.code), Some(-32021));
}

#[tokio::test]
async fn unauthorized_is_an_error_and_nothing_is_remembered() {
    // Without credentials configured: an error that says how to give them.
    let err = assert_fails(|_| Reply::text(401, "Unauthorized")).await;
    assert!(
        matches!(
            err,
            ClientError::Unauthorized {
                status: 401,
                challenge: None
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the server requires authorization (HTTP 401); give the client credentials with ClientBuilder::auth"
    );
}

#[tokio::test]
async fn too_many_requests_is_an_error_and_nothing_is_remembered() {
    let err = assert_fails(|_| Reply::text(429, "slow down")).await;
    assert!(
        matches!(err, ClientError::Http { status: 429, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn server_errors_are_errors_and_nothing_is_remembered() {
    let err = assert_fails(|_| Reply::text(503, "Service Unavailable")).await;
    assert!(
        matches!(err, ClientError::Http { status: 503, .. }),
        "{err}"
    );
    // Even with a -32601 body: a 5xx is a failure, not an answer.
    let err = assert_fails(|s| Reply::error(500, s, -32601)).await;
    assert!(matches!(err, ClientError::Rpc { status: 500, .. }), "{err}");
}

#[tokio::test]
async fn a_network_error_is_an_error_and_nothing_is_remembered() {
    // A port that was free a moment ago: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    drop(listener);
    let cache = EraCache::new();
    let err = builder(&cache).connect(&url).await.expect_err("no server");
    assert!(matches!(err, ClientError::Network { .. }), "{err}");
    assert_eq!(cache.get(&url), None);
}

#[tokio::test]
async fn unsupported_version_listing_2026_probes_again_once() {
    let f = fake(move |s: &Seen| match s.method() {
        "server/discover" if s.id() == json!(1) => Reply::error_with_data(
            400,
            s,
            -32022,
            Some(json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})),
        ),
        "server/discover" => Reply::result(s, discover_result()),
        _ => Reply::text(500, "unexpected"),
    })
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("modern");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    assert_eq!(f.methods(), ["server/discover", "server/discover"]);
    assert_eq!(f.seen()[1].id(), json!(2), "a new id for the second probe");
}

#[tokio::test]
async fn uses_2026_when_discover_lists_it() {
    let f = fake(modern(|s| Reply::text(500, s.method()))).await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("modern");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    assert_eq!(
        client.server_info().map(|i| i.name),
        Some("fake".to_owned())
    );
    let probe = &f.seen()[0];
    assert_eq!(
        probe.body,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}})
    );
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(probe.header("mcp-method"), Some("server/discover"));
    assert_eq!(probe.header("mcp-name"), None);
    assert_eq!(
        probe.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert!(matches!(cache.get(&f.url), Some(Remembered::Modern(_))));
}

// ------------------------------------------------------------------------------ memory

fn tool_reply(s: &Seen) -> Reply {
    let name = s.body["params"]["name"].as_str().unwrap_or_default();
    let id = s.id();
    let raw = |body: &str| Reply::Plain(200, "application/json", body.to_owned());
    match name {
        "unparseable" => raw("this is not json"),
        "no-result" => raw(&json!({"jsonrpc": "2.0", "id": id}).to_string()),
        "unknown-type" => Reply::result(s, json!({"resultType": "unheard-of", "content": []})),
        "tool-error" => Reply::result(
            s,
            json!({"resultType": "complete", "isError": true, "content": [{"type": "text", "text": "no"}]}),
        ),
        "ok" => Reply::result(
            s,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "fine"}]}),
        ),
        code => {
            let code: i64 = code.parse().unwrap_or(-32603);
            let status = match code {
                -32601 => 404,
                -32700 | -32600 | -32020 | -32021 | -32022 => 400,
                _ => 200,
            };
            Reply::error(status, s, code)
        }
    }
}

/// Connects (remembering 2026-07-28), calls `tool`, and says whether the memory survived.
async fn memory_after(tool: &str) -> bool {
    let f = fake(modern(|s| match s.method() {
        "tools/call" => tool_reply(s),
        _ => Reply::status(500),
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    assert!(cache.get(&f.url).is_some());
    let _ = client.call_tool(tool, json!({})).await;
    let kept = cache.get(&f.url).is_some();
    // A new connection probes again exactly when the memory is gone.
    let _again = builder(&cache).connect(&f.url).await.expect("reconnect");
    assert_eq!(
        f.count("server/discover"),
        if kept { 1 } else { 2 },
        "{tool}"
    );
    kept
}

#[tokio::test]
async fn remembers_what_a_server_speaks() {
    // 2026-07-28: the second connection sends nothing at all.
    let f = fake(modern(|s| Reply::text(500, s.method()))).await;
    let cache = EraCache::new();
    builder(&cache).connect(&f.url).await.expect("first");
    let second = builder(&cache).connect(&f.url).await.expect("second");
    assert_eq!(second.revision(), Revision::V2026_07_28);
    assert_eq!(f.methods(), ["server/discover"]);
    // Handshake: the second connection goes straight to initialize.
    let f = fake(handshake_era(|s| Reply::error(200, s, -32601))).await;
    builder(&cache).connect(&f.url).await.expect("first");
    builder(&cache).connect(&f.url).await.expect("second");
    assert_eq!(
        f.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "initialize",
            "notifications/initialized"
        ]
    );
}

#[tokio::test]
async fn forgets_on_an_unparseable_reply() {
    assert!(!memory_after("unparseable").await);
}

#[tokio::test]
async fn forgets_on_a_reply_without_result_or_error() {
    assert!(!memory_after("no-result").await);
}

#[tokio::test]
async fn forgets_on_an_unknown_result_type() {
    assert!(!memory_after("unknown-type").await);
}

#[tokio::test]
async fn forgets_on_parse_error_invalid_request_and_method_not_found() {
    for code in ["-32700", "-32600", "-32601"] {
        assert!(!memory_after(code).await, "{code}");
    }
}

#[tokio::test]
async fn forgets_on_2026_error_codes() {
    for code in ["-32020", "-32021", "-32022"] {
        assert!(!memory_after(code).await, "{code}");
    }
}

#[tokio::test]
async fn keeps_on_tool_errors() {
    assert!(memory_after("tool-error").await);
    for code in ["-32602", "-32603", "-32001", "1234"] {
        assert!(memory_after(code).await, "{code}");
    }
    assert!(memory_after("ok").await);
}

#[tokio::test]
async fn a_remembered_handshake_that_now_fails_probes_again() {
    let cache = EraCache::new();
    let f = fake(modern(|s| match s.method() {
        "initialize" => Reply::error(404, s, -32601),
        _ => Reply::status(500),
    }))
    .await;
    cache.remember(&f.url, Remembered::Legacy(Revision::V2025_11_25));
    let client = builder(&cache).connect(&f.url).await.expect("re-probed");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    assert_eq!(f.methods(), ["initialize", "server/discover"]);
}

// ------------------------------------------------------------------------------ sessions

#[tokio::test]
async fn sends_the_version_and_the_session_after_initialize() {
    let f = fake_with_session(
        Some("session-1"),
        handshake_era(|s| Reply::error(200, s, -32601)),
    )
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    client.list_tools().await.expect("list");
    assert_eq!(client.session_id().as_deref(), Some("session-1"));
    let seen = f.seen();
    let (http, method): (Vec<_>, Vec<_>) =
        seen.iter().map(|s| (s.http.as_str(), s.method())).unzip();
    assert_eq!(http, ["POST", "POST", "POST", "GET", "POST"]);
    assert_eq!(
        method,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "",
            "tools/list"
        ]
    );
    for s in &seen[..2] {
        assert_eq!(s.header("mcp-session-id"), None);
    }
    assert_eq!(seen[1].header("mcp-protocol-version"), None);
    for s in &seen[2..] {
        assert_eq!(
            s.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{s:?}"
        );
        assert_eq!(s.header("mcp-session-id"), Some("session-1"), "{s:?}");
    }
    assert_eq!(seen[3].header("accept"), Some("text/event-stream"));
    // No 2026-07-28 headers or _meta on the handshake revisions.
    assert_eq!(seen[4].header("mcp-method"), None);
    assert_eq!(seen[4].body["params"], json!({}));
}

#[tokio::test]
async fn uses_a_re_minted_session_id() {
    let f2 = fake(move |s: &Seen| {
        let minted = match s.method() {
            "initialize" => "first",
            _ => "second",
        };
        Reply::Headers(
            Box::new(handshake_era(|s| Reply::error(200, s, -32601))(s)),
            vec![("mcp-session-id", minted.to_owned())],
        )
    })
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f2.url).await.expect("connect");
    client.list_tools().await.expect("list");
    client.list_tools().await.expect("list");
    let seen = f2.seen();
    let sids: Vec<_> = seen
        .iter()
        .filter(|s| s.method() == "tools/list")
        .map(|s| s.header("mcp-session-id").map(str::to_owned))
        .collect();
    // The first list went with the id initialize minted; its answer re-minted it.
    assert_eq!(sids, [Some("first".to_owned()), Some("second".to_owned())]);
}

#[tokio::test]
async fn starts_a_new_session_once_on_404() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let inits = std::sync::Arc::new(AtomicUsize::new(0));
    let gone = std::sync::Arc::new(AtomicBool::new(false));
    let i = inits.clone();
    let g = gone.clone();
    let f = fake(move |s: &Seen| {
        if s.http != "POST" {
            return Reply::status(405);
        }
        match s.method() {
            "server/discover" => Reply::error(200, s, -32601),
            "initialize" => {
                let n = i.fetch_add(1, Ordering::SeqCst) + 1;
                Reply::Headers(
                    Box::new(Reply::result(s, initialize_result())),
                    vec![("mcp-session-id", format!("s{n}"))],
                )
            }
            "notifications/initialized" => Reply::accepted(),
            "tools/list" if s.header("mcp-session-id") == Some("s1") => {
                Reply::text(404, "Session not found")
            }
            "tools/list"
                if s.header("mcp-session-id") == Some("s2") && !g.load(Ordering::SeqCst) =>
            {
                Reply::result(s, json!({"tools": []}))
            }
            _ => Reply::text(404, "Session not found"),
        }
    })
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    assert_eq!(client.list_tools().await.expect("renewed").len(), 0);
    assert_eq!(client.session_id().as_deref(), Some("s2"));
    assert_eq!(
        f.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    // Only once: a session that is gone again is an error.
    gone.store(true, Ordering::SeqCst);
    let err = client.list_tools().await.expect_err("gone twice");
    assert!(
        matches!(err, ClientError::Http { status: 404, .. }),
        "{err}"
    );
    assert_eq!(f.count("initialize"), 3);
}

// ------------------------------------------------------------------------------ 2026 calls

fn tools_list(tools: Value) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |s: &Seen| match s.method() {
        "tools/list" => Reply::result(
            s,
            json!({"resultType": "complete", "tools": tools.clone(), "ttlMs": 0, "cacheScope": "private"}),
        ),
        "tools/call" | "prompts/get" | "resources/read" => Reply::result(
            s,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "42"}],
                "messages": [], "contents": []}),
        ),
        _ => Reply::error(404, s, -32601),
    }
}

#[tokio::test]
async fn modern_requests_carry_meta_and_the_standard_headers() {
    let f = fake(modern(tools_list(json!([])))).await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let n: i64 = client.call("add", json!({"a": 2})).await.expect("call");
    assert_eq!(n, 42);
    client.read("file:///a b.txt").await.expect("read");
    client
        .get_prompt("Grüße", json!({"x": "y"}))
        .await
        .expect("get");
    let seen = f.seen();
    let call = &seen[1];
    // `tools/call` declares the tasks extension; other requests do not.
    let mut call_meta = meta();
    call_meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    assert_eq!(
        call.body,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2}, "_meta": call_meta}})
    );
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("add"));
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert_eq!(seen[2].header("mcp-method"), Some("resources/read"));
    assert_eq!(seen[2].header("mcp-name"), Some("file:///a b.txt"));
    assert_eq!(seen[2].body["params"]["_meta"], meta());
    // Non-ASCII names use the Base64 sentinel; Mcp-Method never does.
    assert_eq!(seen[3].header("mcp-name"), Some("=?base64?R3LDvMOfZQ==?="));
    assert_eq!(seen[3].header("mcp-method"), Some("prompts/get"));
    // No session, ever.
    assert!(seen.iter().all(|s| s.header("mcp-session-id").is_none()));
}

#[tokio::test]
async fn a_header_value_with_a_control_byte_is_refused_before_sending() {
    let f = fake(modern(tools_list(json!([])))).await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let err = client
        .request("tools/\nlist", json!({}))
        .await
        .expect_err("refused");
    assert!(matches!(err, ClientError::InvalidHeader { .. }), "{err}");
    let err = client
        .request("outils/liste\u{7f}", json!({}))
        .await
        .expect_err("refused");
    assert!(matches!(err, ClientError::InvalidHeader { .. }), "{err}");
    assert_eq!(f.methods(), ["server/discover"], "nothing was sent");
    // Mcp-Name is Base64-encoded instead.
    client
        .call_tool("line\nbreak", json!({}))
        .await
        .expect("sent");
    assert_eq!(
        f.seen()[1].header("mcp-name"),
        Some("=?base64?bGluZQpicmVhaw==?=")
    );
}

#[tokio::test]
async fn mirrors_x_mcp_header_parameters_and_drops_invalid_tools() {
    let tools = json!([
        {"name": "regional", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "gone": {"type": "string", "x-mcp-header": "Gone"},
            "q": {"type": "string"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "x": {"type": "number", "x-mcp-header": "X"}}}},
        {"name": "also_bad", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Dup"},
            "b": {"type": "string", "x-mcp-header": "dup"}}}}
    ]);
    let f = fake(modern(tools_list(tools))).await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let names: Vec<String> = client
        .list_tools()
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["regional"]);
    client
        .call_tool(
            "regional",
            json!({"region": "Zürich", "n": 42, "flag": false, "gone": null, "q": "x"}),
        )
        .await
        .expect("call");
    let call = f.seen().pop().expect("the call");
    assert_eq!(
        call.header("mcp-param-region"),
        Some("=?base64?WsO8cmljaA==?=")
    );
    assert_eq!(call.header("mcp-param-n"), Some("42"));
    assert_eq!(call.header("mcp-param-flag"), Some("false"));
    assert_eq!(call.header("mcp-param-gone"), None);
    assert_eq!(call.header("mcp-param-q"), None);
}

#[tokio::test]
async fn a_header_mismatch_on_an_unlisted_tool_lists_and_retries_once() {
    let tools = json!([{"name": "regional", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}]);
    let inner = tools_list(tools);
    let f = fake(modern(move |s: &Seen| {
        if s.method() == "tools/call" && s.header("mcp-param-region").is_none() {
            return Reply::error(400, s, -32020);
        }
        inner(s)
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    client
        .call_tool("regional", json!({"region": "eu"}))
        .await
        .expect("retried");
    assert_eq!(
        f.methods(),
        ["server/discover", "tools/call", "tools/list", "tools/call"]
    );
}

#[tokio::test]
async fn input_required_rounds_use_the_handlers_and_echo_the_state() {
    let f = fake(modern(|s: &Seen| {
        let p = &s.body["params"];
        if p.get("inputResponses").is_none() {
            return Reply::result(
                s,
                json!({"resultType": "input_required",
                    "inputRequests": {
                        "who": {"method": "elicitation/create", "params": {"message": "Name?",
                            "requestedSchema": {"type": "object", "properties": {
                                "name": {"type": "string"}, "age": {"type": "integer", "default": 7}}}}},
                        "llm": {"method": "sampling/createMessage", "params": {
                            "messages": [{"role": "user", "content": {"type": "text", "text": "Capital?"}}],
                            "maxTokens": 10}},
                        "where": {"method": "roots/list"}
                    },
                    "requestState": "st\u{e9}te+/=="}),
            );
        }
        Reply::result(
            s,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
        )
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache)
        .on_elicitation(|req| async move {
            assert_eq!(req.message, "Name?");
            let mut c = Map::new();
            c.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(c))
        })
        .on_sampling(|_req| async {
            Ok(CreateMessageResult::new(
                Role::Assistant,
                json!({"type": "text", "text": "Paris"}),
                "m",
            ))
        })
        .roots(vec![Root::new("file:///w")])
        .connect(&f.url)
        .await
        .expect("connect");
    let out: String = client.call("ask", json!({"q": 1})).await.expect("call");
    assert_eq!(out, "done");
    let seen = f.seen();
    let (first, retry) = (&seen[1], &seen[2]);
    assert_ne!(first.id(), retry.id());
    let mut meta = meta();
    // `tools/call` also declares the tasks extension (the client follows tasks by default).
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}});
    assert_eq!(
        retry.body["params"],
        json!({"name": "ask", "arguments": {"q": 1}, "_meta": meta,
            "inputResponses": {
                "who": {"action": "accept", "content": {"name": "Ada", "age": 7}},
                "llm": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
                "where": {"roots": [{"uri": "file:///w"}]}
            },
            "requestState": "st\u{e9}te+/=="})
    );
    assert_eq!(first.body["params"].get("requestState"), None);
}

#[tokio::test]
async fn a_missing_handler_means_the_capability_is_not_declared() {
    let f = fake(modern(|s: &Seen| {
        Reply::result(
            s,
            json!({"resultType": "input_required", "inputRequests": {
                "x": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}}}),
        )
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache)
        .on_elicitation(|_| async { Ok(ElicitResult::decline()) })
        .connect(&f.url)
        .await
        .expect("connect");
    let err = client
        .call_tool("t", json!({}))
        .await
        .expect_err("no handler");
    assert!(
        matches!(&err, ClientError::MissingHandler { method } if method == "sampling/createMessage"),
        "{err}"
    );
    assert_eq!(
        f.seen()[1].body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
}

#[tokio::test]
async fn modern_subscriptions_stream_the_tagged_notifications() {
    let f = fake(modern(|s: &Seen| {
        let id = s.id();
        let tag = json!({"io.modelcontextprotocol/subscriptionId": id});
        Reply::Events(vec![
            Step::Message(
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": {"toolsListChanged": true}, "_meta": tag}}),
            ),
            Step::Pause(Duration::from_millis(50)),
            Step::Message(
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                    "params": {"_meta": tag}}),
            ),
            Step::Pause(Duration::from_secs(30)),
        ])
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let mut sub = client
        .subscribe(Subscription {
            tools_list_changed: true,
            ..Subscription::default()
        })
        .await
        .expect("acknowledged");
    let n = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .expect("in time")
        .expect("a notification");
    assert_eq!(n.method, "notifications/tools/list_changed");
    let listen = &f.seen()[1];
    assert_eq!(listen.method(), "subscriptions/listen");
    assert_eq!(
        listen.body["params"],
        json!({"notifications": {"toolsListChanged": true}, "_meta": meta()})
    );
    assert_eq!(listen.header("mcp-method"), Some("subscriptions/listen"));
}

// ------------------------------------------------------------------------------ legacy calls

fn legacy_with(
    call: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    let base = handshake_era(|s| Reply::error(200, s, -32601));
    move |s: &Seen| {
        if s.method() == "tools/call" || (s.http == "GET" && s.header("last-event-id").is_some()) {
            return call(s);
        }
        if s.http == "POST" && s.body.get("method").is_none() {
            return Reply::accepted();
        }
        base(s)
    }
}

/// `input_required` exists on 2026-07-28 only: on a handshake session it is a protocol error,
/// and no handler is asked and nothing is retried.
#[tokio::test]
async fn input_required_on_a_handshake_session_is_a_protocol_error() {
    let f = fake_with_session(
        Some("s"),
        legacy_with(|s: &Seen| {
            Reply::result(
                s,
                json!({"resultType": "input_required", "inputRequests": {
                    "who": {"method": "roots/list"}}, "requestState": "x"}),
            )
        }),
    )
    .await;
    let cache = EraCache::new();
    let client = builder(&cache)
        .roots(vec![])
        .connect(&f.url)
        .await
        .expect("connect");
    assert_eq!(client.revision(), Revision::V2025_11_25);
    match client.call_tool("ask", json!({})).await {
        Err(ClientError::Protocol(m)) => assert_eq!(
            m,
            "the server answered tools/call with input_required, which 2025-11-25 does not have (handshake revisions ask with requests on the call's stream)"
        ),
        other => panic!("{other:?}"),
    }
    let calls = f
        .seen()
        .iter()
        .filter(|s| s.method() == "tools/call")
        .count();
    assert_eq!(calls, 1, "not retried");
}

#[tokio::test]
async fn answers_server_requests_on_the_call_stream_and_matches_responses_by_id() {
    let f = fake_with_session(
        Some("s"),
        legacy_with(|s: &Seen| {
            let id = s.id();
            Reply::Events(vec![
                Step::Message(
                    json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                        "params": {"message": "Name?", "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string"}}}}}),
                ),
                Step::Pause(Duration::from_millis(300)),
                Step::Message(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": 1}})),
                // A response for some other request id is not this call's answer.
                Step::Message(json!({"jsonrpc": "2.0", "id": 999, "result": {"content": []}})),
                Step::Message(
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "Hi Ada"}]}}),
                ),
            ])
        }),
    )
    .await;
    let cache = EraCache::new();
    let client = builder(&cache)
        .on_elicitation(|_| async {
            let mut c = Map::new();
            c.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(c))
        })
        .connect(&f.url)
        .await
        .expect("connect");
    let text: String = client.call("ask", json!({})).await.expect("call");
    assert_eq!(text, "Hi Ada");
    let answer = f
        .seen()
        .into_iter()
        .find(|s| s.body.get("result").is_some())
        .expect("the client answered");
    assert_eq!(
        answer.body,
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept", "content": {"name": "Ada"}}})
    );
    assert_eq!(answer.header("mcp-session-id"), Some("s"));
    assert_eq!(answer.header("mcp-protocol-version"), Some("2025-11-25"));
}

#[tokio::test]
async fn resumes_a_dropped_stream_with_last_event_id_after_the_retry_interval() {
    let f = fake_with_session(
        Some("s"),
        legacy_with(|s: &Seen| {
            if s.http == "GET" {
                return Reply::Events(vec![Step::Raw(format!(
                        "id: e2\ndata: {}\n\n",
                        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "resumed"}]}})
                    ))]);
            }
            Reply::Events(vec![Step::Raw("id: e1\nretry: 400\ndata: \n\n".into())])
        }),
    )
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let started = Instant::now();
    let text: String = client.call("slow", json!({})).await.expect("resumed");
    assert_eq!(text, "resumed");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "waited for retry"
    );
    let resume = f
        .seen()
        .into_iter()
        .find(|s| s.http == "GET" && s.header("last-event-id").is_some())
        .expect("a resumption");
    assert_eq!(resume.header("last-event-id"), Some("e1"));
    assert_eq!(resume.header("mcp-session-id"), Some("s"));
}

#[tokio::test]
async fn legacy_subscriptions_get_notifications_from_the_get_stream() {
    let f = fake_with_session(Some("s"), move |s: &Seen| {
        if s.http == "GET" {
            return Reply::Events(vec![
                Step::Raw(": open\n\n".into()),
                Step::Pause(Duration::from_millis(500)),
                Step::Message(
                    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": "file:///x"}}),
                ),
                Step::Message(
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                ),
                Step::Pause(Duration::from_secs(30)),
            ]);
        }
        match s.method() {
            "resources/subscribe" => Reply::result(s, json!({})),
            _ => handshake_era(|s| Reply::error(200, s, -32601))(s),
        }
    })
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let mut sub = client
        .subscribe(Subscription {
            resource_subscriptions: vec!["file:///x".into()],
            ..Subscription::default()
        })
        .await
        .expect("subscribed");
    let n = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .expect("in time")
        .expect("a notification");
    assert_eq!(n.method, "notifications/resources/updated");
    assert_eq!(n.uri(), Some("file:///x"));
    // tools/list_changed was not asked for.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), sub.recv())
            .await
            .is_err()
    );
    let subscribe = f
        .seen()
        .into_iter()
        .find(|s| s.method() == "resources/subscribe")
        .expect("subscribed");
    assert_eq!(subscribe.body["params"], json!({"uri": "file:///x"}));
}

#[tokio::test]
async fn tool_errors_are_results_or_typed_errors() {
    let f = fake(modern(tool_reply)).await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let r = client
        .call_tool("tool-error", json!({}))
        .await
        .expect("a result");
    assert!(r.is_error());
    let err = client
        .call::<Value>("tool-error", json!({}))
        .await
        .expect_err("typed");
    assert!(matches!(err, ClientError::Tool { .. }), "{err}");
    assert_eq!(err.to_string(), "tool tool-error failed: no");
}

#[tokio::test]
async fn completion_sends_the_reference_and_the_argument() {
    let f = fake(modern(|s: &Seen| {
        Reply::result(
            s,
            json!({"resultType": "complete", "completion": {"values": ["alice", "alan"], "total": 2, "hasMore": false}}),
        )
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let c = client
        .complete(sake::CompletionReference::prompt("greet"), "name", "al")
        .await
        .expect("complete");
    assert_eq!(c.values, ["alice", "alan"]);
    assert_eq!(c.total, Some(2));
    let template = client
        .complete(
            sake::CompletionReference::resource("users://{id}"),
            "id",
            "1",
        )
        .await
        .expect("complete");
    assert_eq!(template.values.len(), 2);
    let seen = f.seen();
    assert_eq!(
        seen[1].body["params"],
        json!({"ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "name", "value": "al"}, "_meta": meta()})
    );
    assert_eq!(
        seen[2].body["params"]["ref"],
        json!({"type": "ref/resource", "uri": "users://{id}"})
    );
    assert_eq!(seen[1].header("mcp-method"), Some("completion/complete"));
}

#[tokio::test]
async fn lists_follow_every_page() {
    let f = fake(modern(|s: &Seen| {
        let (tools, next) = match s.body["params"].get("cursor").and_then(Value::as_str) {
            None => (
                json!([{"name": "a", "inputSchema": {"type": "object"}}]),
                json!("p2"),
            ),
            Some("p2") => (
                json!([{"name": "b", "inputSchema": {"type": "object"}}]),
                json!(""),
            ),
            Some(_) => (
                json!([{"name": "c", "inputSchema": {"type": "object"}}]),
                Value::Null,
            ),
        };
        let mut result =
            json!({"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "private"});
        if !next.is_null() {
            result["nextCursor"] = next;
        }
        Reply::result(s, result)
    }))
    .await;
    let cache = EraCache::new();
    let client = builder(&cache).connect(&f.url).await.expect("connect");
    let names: Vec<String> = client
        .list_tools()
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    // An empty string is a cursor, not the end.
    assert_eq!(names, ["a", "b", "c"]);
    let cursors: Vec<Value> = f
        .seen()
        .iter()
        .skip(1)
        .map(|s| {
            s.body["params"]
                .get("cursor")
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(cursors, [Value::Null, json!("p2"), json!("")]);
}
