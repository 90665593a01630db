//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the wire, in both eras: what a client
//! that declares the extension sees (tools with `_meta.ui`, app-only tools, views) and what one
//! that does not sees (plain tools with useful text), the lists' caching hints, views read with
//! their `_meta.ui`, app-only tools refused to clients without the extension, the extension
//! advertised, CORS for a browser host, and the start-up checks of links and views. Whole
//! payloads and exact statuses; every reply is validated against its revision's schema (the
//! harness), and every `_meta.ui` against the extension's (`spec/ext-apps/schema.json`).

use sake::apps::{CspDef, ToolUiDef, ViewDef, ViewHtml, Visibility};
use sake::prelude::*;
use sake::registry::{Location, Registry, TaskSupport, ToolDef, ToolFuture, ToolHints};
use sake_tests::rpc::{complete, err, ok, with_caps};
use sake_tests::{LEGACY, Req, Wire, same};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

/// A card: the weather of a city.
#[view(
    uri = "ui://wire/card",
    html = "apps/card.html",
    title = "Card",
    csp(
        connect_domains = ["https://api.example.com"],
        resource_domains = ["https://cdn.example.com", "https://*.fonts.example"]
    ),
    permissions(clipboard_write),
    domain = "card.example",
    prefers_border
)]
struct Card;

/// A view made on each read.
#[view(uri = "ui://wire/live", name = "live", html = live_html)]
struct Live;

async fn live_html(ctx: Context) -> Result<String, std::fmt::Error> {
    Ok(format!("<!DOCTYPE html><p>{}</p>", ctx.revision()))
}

/// The weather of a city.
#[derive(Serialize, JsonSchema)]
struct Weather {
    city: String,
    celsius: i32,
}

/// The weather of a city, shown on a card.
#[tool(ui = Card, annotations(read_only))]
fn weather(
    /// The city.
    city: String,
) -> Weather {
    Weather { city, celsius: 21 }
}

/// Refreshes the card (its button).
#[tool(ui = "ui://wire/card", visibility(app))]
fn refresh() -> String {
    "refreshed".into()
}

/// Live numbers, for the model only.
#[tool(ui = Live, visibility(model))]
fn live() -> String {
    "live".into()
}

/// A tool without a view.
#[tool]
fn plain() -> String {
    "plain".into()
}

/// About this server.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "about"
}

const SERVER: (&str, &str) = ("wire-apps", "1.0.0");

fn server() -> Server {
    Server::from_registry().name(SERVER.0).version(SERVER.1)
}

fn wire() -> Wire {
    Wire::new(server())
}

/// The client capabilities that declare MCP Apps.
fn apps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

const CARD_HTML: &str = include_str!("apps/card.html");

// ---------------------------------------------------------------------------------------------
// Expected listings

fn input_schema(props: Value, required: &[&str]) -> Value {
    let mut s = json!({"type": "object", "properties": props});
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    s
}

fn ui_meta(uri: &str, visibility: &[&str]) -> Value {
    json!({"ui": {"resourceUri": uri, "visibility": visibility}, "ui/resourceUri": uri})
}

/// The tools a revision lists; with `apps`, `_meta.ui` and the app-only `refresh`.
fn tools(apps: bool, structured_output: bool) -> Value {
    let with = |mut tool: Value, meta: Value| {
        if apps {
            tool["_meta"] = meta;
        }
        tool
    };
    let mut weather = json!({
        "name": "weather",
        "description": "The weather of a city, shown on a card.",
        "inputSchema": input_schema(json!({"city": {"type": "string", "description": "The city."}}), &["city"]),
        "annotations": {"readOnlyHint": true},
    });
    if structured_output {
        weather["outputSchema"] = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
            "required": ["city", "celsius"],
            "description": "The weather of a city.",
        });
    }
    let mut list = vec![with(
        json!({"name": "live", "description": "Live numbers, for the model only.",
               "inputSchema": {"type": "object", "properties": {}}}),
        ui_meta("ui://wire/live", &["model"]),
    )];
    list.push(
        json!({"name": "plain", "description": "A tool without a view.",
                     "inputSchema": {"type": "object", "properties": {}}}),
    );
    if apps {
        list.push(with(
            json!({"name": "refresh", "description": "Refreshes the card (its button).",
                   "inputSchema": {"type": "object", "properties": {}}}),
            ui_meta("ui://wire/card", &["app"]),
        ));
    }
    list.push(with(weather, ui_meta("ui://wire/card", &["model", "app"])));
    Value::Array(list)
}

fn card_meta() -> Value {
    json!({"ui": {
        "csp": {"connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://cdn.example.com", "https://*.fonts.example"]},
        "permissions": {"clipboardWrite": {}},
        "domain": "card.example",
        "prefersBorder": true,
    }})
}

/// The static resources a revision lists (`titles`: the revision has `title`); with `apps`,
/// the views, in the order of their URIs.
fn resources(apps: bool, titles: bool) -> Value {
    let about = json!({"uri": "docs://about", "name": "about", "description": "About this server.", "mimeType": "text/plain"});
    if !apps {
        return json!([about]);
    }
    let mut card = json!({"uri": "ui://wire/card", "name": "Card", "title": "Card",
        "description": "A card: the weather of a city.",
        "mimeType": "text/html;profile=mcp-app", "size": CARD_HTML.len(),
        "_meta": card_meta()});
    if !titles {
        card.as_object_mut().unwrap().remove("title");
    }
    let live = json!({"uri": "ui://wire/live", "name": "live", "description": "A view made on each read.",
        "mimeType": "text/html;profile=mcp-app"});
    json!([about, card, live])
}

// ---------------------------------------------------------------------------------------------
// The extension's own schema

/// Validates `value` against a definition of `spec/ext-apps/schema.json`.
fn ext_apps(definition: &str, value: &Value) {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let root = SCHEMA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/ext-apps/schema.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    });
    let schema = json!({"$defs": root["$defs"], "$ref": format!("#/$defs/{definition}")});
    let validator = jsonschema::validator_for(&schema).unwrap();
    if let Err(e) = validator.validate(value) {
        panic!("{value} is not a {definition}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Lists

#[tokio::test]
async fn a_2026_client_without_the_extension_sees_plain_tools() {
    let wire = wire();
    wire.rpc(1, "tools/list", json!({})).await.assert_json(
        200,
        ok(
            1,
            complete(
                SERVER,
                json!({"ttlMs": 60000, "cacheScope": "private", "tools": tools(false, true)}),
            ),
        ),
    );
    wire.rpc(2, "resources/list", json!({})).await.assert_json(
        200,
        ok(
            2,
            complete(
                SERVER,
                json!({"ttlMs": 60000, "cacheScope": "private", "resources": resources(false, true)}),
            ),
        ),
    );
    // The useful text of a tool with a view.
    wire.rpc(
        3,
        "tools/call",
        json!({"name": "weather", "arguments": {"city": "Oslo"}}),
    )
    .await
    .assert_json(
        200,
        ok(
            3,
            complete(
                SERVER,
                json!({"content": [{"type": "text", "text": "{\"city\":\"Oslo\",\"celsius\":21}"}],
                           "structuredContent": {"city": "Oslo", "celsius": 21}}),
            ),
        ),
    );
}

#[tokio::test]
async fn a_2026_client_with_the_extension_sees_views_and_app_only_tools() {
    let wire = wire();
    let reply = wire
        .rpc(1, "tools/list", with_caps(json!({}), apps()))
        .await;
    reply.assert_json(
        200,
        ok(
            1,
            complete(
                SERVER,
                json!({"ttlMs": 60000, "cacheScope": "private", "tools": tools(true, true)}),
            ),
        ),
    );
    for tool in reply.json(200)["result"]["tools"].as_array().unwrap() {
        if let Some(ui) = tool.pointer("/_meta/ui") {
            ext_apps("McpUiToolMeta", ui);
        }
    }
    let reply = wire
        .rpc(2, "resources/list", with_caps(json!({}), apps()))
        .await;
    reply.assert_json(
        200,
        ok(
            2,
            complete(
                SERVER,
                json!({"ttlMs": 60000, "cacheScope": "private", "resources": resources(true, true)}),
            ),
        ),
    );
    ext_apps(
        "McpUiResourceMeta",
        &reply.json(200)["result"]["resources"][1]["_meta"]["ui"],
    );
    // Lists that do not depend on the extension keep the configured scope.
    wire.rpc(3, "resources/templates/list", with_caps(json!({}), apps()))
        .await
        .assert_json(
            200,
            ok(
                3,
                complete(
                    SERVER,
                    json!({"ttlMs": 60000, "cacheScope": "public", "resourceTemplates": []}),
                ),
            ),
        );
}

#[tokio::test]
async fn the_extension_counts_only_with_the_view_mime_type() {
    let wire = wire();
    for caps in [
        json!({"extensions": {"io.modelcontextprotocol/ui": {}}}),
        json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}}),
        json!({"experimental": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}),
    ] {
        let reply = wire.rpc(1, "tools/list", with_caps(json!({}), caps)).await;
        same(&reply.json(200)["result"]["tools"], tools(false, true));
    }
    let spaced = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/plain", "Text/HTML; profile=mcp-app"]}}});
    let reply = wire
        .rpc(1, "tools/list", with_caps(json!({}), spaced))
        .await;
    same(&reply.json(200)["result"]["tools"], tools(true, true));
}

#[tokio::test]
async fn each_audience_keeps_its_own_lists() {
    // Rendered on first use per (revision, audience), then served as they are: alternating
    // audiences never mixes them up.
    let wire = wire();
    for round in 0..3 {
        for (caps, apps_on) in [(apps(), true), (json!({}), false)] {
            let reply = wire
                .rpc(round, "tools/list", with_caps(json!({}), caps))
                .await;
            same(&reply.json(200)["result"]["tools"], tools(apps_on, true));
        }
    }
}

#[tokio::test]
async fn normalised_schemas_reach_both_audiences() {
    // Start-up may rewrite the listings (`Server::normalize_schemas`): a client with MCP Apps
    // gets the same tools as the others, plus `_meta.ui`.
    let wire = Wire::new(server().normalize_schemas([sake::compat::Profile::OpenAiStrict]));
    let plain = wire.rpc(1, "tools/list", json!({})).await;
    let with = wire
        .rpc(2, "tools/list", with_caps(json!({}), apps()))
        .await;
    let plain = plain.json(200)["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let mut with = with.json(200)["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    with.retain(|t| t["name"] != "refresh");
    for t in &mut with {
        t.as_object_mut().unwrap().remove("_meta");
    }
    same(with, Value::Array(plain.clone()));
    assert_ne!(
        Value::Array(plain),
        tools(false, true),
        "the profile changed nothing: choose another"
    );
}

#[tokio::test]
async fn handshake_sessions_see_what_initialize_declared() {
    let wire = wire();
    for revision in LEGACY {
        let structured = revision != "2025-03-26";
        let titles = revision != "2025-03-26";
        for (caps, apps_on) in [(apps(), true), (json!({}), false)] {
            let session = wire.session(revision, caps).await;
            session
                .rpc(1, "tools/list", Value::Null)
                .await
                .assert_json(200, ok(1, json!({"tools": tools(apps_on, structured)})));
            session
                .rpc(2, "resources/list", Value::Null)
                .await
                .assert_json(200, ok(2, json!({"resources": resources(apps_on, titles)})));
        }
    }
}

#[tokio::test]
async fn the_extension_is_advertised_in_both_eras() {
    let capabilities = json!({"logging": {}, "resources": {"subscribe": true, "listChanged": true},
        "tools": {"listChanged": true},
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    let wire = wire();
    let reply = wire.rpc(1, "server/discover", json!({})).await;
    same(
        &reply.json(200)["result"]["capabilities"],
        capabilities.clone(),
    );
    let (reply, _) = wire.initialize("2025-11-25", json!({})).await;
    same(&reply.json(200)["result"]["capabilities"], capabilities);
}

// ---------------------------------------------------------------------------------------------
// Views

#[tokio::test]
async fn a_view_is_read_with_its_meta_whoever_asks() {
    let wire = wire();
    let card = json!({"contents": [{"uri": "ui://wire/card", "mimeType": "text/html;profile=mcp-app",
        "text": CARD_HTML, "_meta": card_meta()}]});
    for caps in [apps(), json!({})] {
        let reply = wire
            .rpc(
                1,
                "resources/read",
                with_caps(json!({"uri": "ui://wire/card"}), caps),
            )
            .await;
        reply.assert_json(
            200,
            ok(
                1,
                complete(
                    SERVER,
                    json!({"ttlMs": 60000, "cacheScope": "public", "contents": card["contents"]}),
                ),
            ),
        );
        ext_apps(
            "McpUiResourceMeta",
            &reply.json(200)["result"]["contents"][0]["_meta"]["ui"],
        );
    }
    let session = wire.session("2025-11-25", apps()).await;
    session
        .rpc(2, "resources/read", json!({"uri": "ui://wire/card"}))
        .await
        .assert_json(200, ok(2, card));
}

#[tokio::test]
async fn a_view_from_a_function_is_made_on_each_read() {
    let wire = wire();
    wire.rpc(1, "resources/read", json!({"uri": "ui://wire/live"}))
        .await
        .assert_json(
            200,
            ok(
                1,
                complete(
                    SERVER,
                    json!({"ttlMs": 60000, "cacheScope": "public", "contents": [{"uri": "ui://wire/live",
                        "mimeType": "text/html;profile=mcp-app", "text": "<!DOCTYPE html><p>2026-07-28</p>"}]}),
                ),
            ),
        );
    let session = wire.session("2025-06-18", json!({})).await;
    session
        .rpc(2, "resources/read", json!({"uri": "ui://wire/live"}))
        .await
        .assert_json(
            200,
            ok(
                2,
                json!({"contents": [{"uri": "ui://wire/live", "mimeType": "text/html;profile=mcp-app",
                    "text": "<!DOCTYPE html><p>2025-06-18</p>"}]}),
            ),
        );
    // A view that does not exist is a resource that does not exist.
    wire.rpc(3, "resources/read", json!({"uri": "ui://wire/none"}))
        .await
        .assert_json(
            200,
            err(
                3,
                -32602,
                "Resource not found: ui://wire/none",
                Some(json!({"uri": "ui://wire/none"})),
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// App-only tools

fn app_only_refusal() -> Value {
    json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}})
}

const REFUSED: &str = "Missing required client capability: tool `refresh` is called by MCP App views only; declare `extensions[\"io.modelcontextprotocol/ui\"]: {\"mimeTypes\": [\"text/html;profile=mcp-app\"]}` in the client capabilities";

#[tokio::test]
async fn app_only_tools_answer_clients_that_declared_the_extension() {
    let wire = wire();
    wire.rpc(1, "tools/call", json!({"name": "refresh"}))
        .await
        .assert_json(400, err(1, -32021, REFUSED, Some(app_only_refusal())));
    wire.rpc(
        2,
        "tools/call",
        with_caps(json!({"name": "refresh"}), apps()),
    )
    .await
    .assert_json(
        200,
        ok(
            2,
            complete(
                SERVER,
                json!({"content": [{"type": "text", "text": "refreshed"}]}),
            ),
        ),
    );
    // A model-only tool and a tool without a view answer everyone.
    for name in ["live", "plain"] {
        let reply = wire.rpc(3, "tools/call", json!({"name": name})).await;
        assert_eq!(reply.json(200)["result"]["content"][0]["text"], name);
    }
    for revision in LEGACY {
        let without = wire.session(revision, json!({})).await;
        without
            .call(4, "refresh", json!({}))
            .await
            .assert_json(200, err(4, -32602, REFUSED, Some(app_only_refusal())));
        let with = wire.session(revision, apps()).await;
        with.call(5, "refresh", json!({})).await.assert_json(
            200,
            ok(
                5,
                json!({"content": [{"type": "text", "text": "refreshed"}]}),
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// CORS for a browser host

#[tokio::test]
async fn a_browser_host_on_a_named_origin_can_hold_a_session() {
    let wire = Wire::new(server().cors(sake::Cors::new(["http://localhost:6274"])));
    let origin = |req: Req| req.header("origin", "http://localhost:6274");
    let preflight = Req::post(Vec::<u8>::new())
        .http_method(http::Method::OPTIONS)
        .header("origin", "http://localhost:6274")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type,mcp-session-id,mcp-protocol-version",
        );
    let reply = wire.send_unchecked(preflight).await;
    assert_eq!(reply.status, 204);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    let (_, session) = {
        let req = origin(Req::legacy(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": sake_tests::initialize_params("2025-11-25", apps())}),
        ));
        let reply = wire.send_as("2025-11-25", req).await;
        assert_eq!(
            reply.header("access-control-allow-origin"),
            Some("http://localhost:6274")
        );
        assert_eq!(
            reply.header("access-control-expose-headers"),
            Some("Mcp-Session-Id, WWW-Authenticate, Retry-After")
        );
        let id = reply.session_id().unwrap().to_owned();
        (reply, id)
    };
    let req = origin(
        Req::legacy(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25"),
    );
    let reply = wire.send_as("2025-11-25", req).await;
    reply.assert_json(200, ok(1, json!({"tools": tools(true, true)})));
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    // A foreign origin is still refused by the DNS-rebinding check.
    let reply = wire
        .send_unchecked(
            Req::modern(2, "tools/list", json!({})).header("origin", "https://evil.example"),
        )
        .await;
    assert_eq!(reply.status, 403);
    assert_eq!(reply.header("access-control-allow-origin"), None);
}

#[tokio::test]
async fn cors_origins_must_be_origins() {
    for bad in [
        "localhost:6274",
        "https://*.example.com",
        "https://a.example/app",
    ] {
        let e = server()
            .cors(sake::Cors::new([bad]))
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "invalid configuration: Server::cors: {bad:?} is not an origin a browser sends"
            )),
            "{e}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Start-up checks of descriptors written by hand

const HERE: Location = Location {
    file: "tests/wire_apps.rs",
    line: 1,
    module: "wire_apps",
};

fn never_called(_: Option<&serde_json::value::RawValue>, _: Context) -> ToolFuture {
    Box::pin(async { CallToolResult::success(Vec::new()) })
}

fn empty_object() -> Value {
    json!({"type": "object", "properties": {}})
}

fn no_output() -> Option<Value> {
    None
}

macro_rules! tool_linked_to {
    ($def:ident, $uri:expr, $visibility:expr) => {
        static $def: ToolDef = ToolDef {
            name: "linked",
            title: None,
            description: "A tool linked to a view.",
            hints: ToolHints {
                title: None,
                read_only: None,
                destructive: None,
                idempotent: None,
                open_world: None,
            },
            icons: &[],
            input_schema: empty_object,
            output_schema: no_output,
            call: never_called,
            requires: &[],
            scopes: &[],
            principal: false,
            task_support: TaskSupport::Forbidden,
            context: false,
            ui: ToolUiDef {
                resource_uri: $uri,
                visibility: $visibility,
            },
            states: Vec::new,
            location: HERE,
        };
    };
}

macro_rules! view {
    ($def:ident, $uri:expr, $html:expr, $csp:expr, $permissions:expr) => {
        static $def: ViewDef = ViewDef {
            uri: $uri,
            name: "hand",
            title: None,
            description: None,
            html: $html,
            csp: $csp,
            permissions: $permissions,
            domain: None,
            prefers_border: None,
            location: HERE,
        };
    };
}

const DOC: &str = "<!DOCTYPE html><p>hand</p>";
/// `sha256` of [`DOC`] (`printf '%s' … | sha256sum`).
const DOC_SHA256: &str = "d8daacb51451247a280f281d5a76cd4f11f641c8694f7c02e08f1a65b138a92e";

tool_linked_to!(TO_NOWHERE, Some("ui://nowhere"), &[]);
tool_linked_to!(TO_HAND, Some("ui://hand"), &[Visibility::App]);
tool_linked_to!(BAD_URI, Some("https://hand"), &[]);
tool_linked_to!(
    TWICE_APP,
    Some("ui://hand"),
    &[Visibility::App, Visibility::App]
);
view!(
    HAND,
    "ui://hand",
    ViewHtml::embedded(DOC, DOC_SHA256),
    None,
    &[]
);
view!(
    WRONG_DIGEST,
    "ui://hand",
    ViewHtml::embedded(DOC, "00"),
    None,
    &[]
);
view!(
    BAD_ORIGIN,
    "ui://hand",
    ViewHtml::embedded(DOC, DOC_SHA256),
    Some(CspDef {
        connect_domains: &["https://api.example.com; script-src *"],
        resource_domains: &[],
        frame_domains: &[],
        base_uri_domains: &[],
    }),
    &[]
);
view!(
    BAD_PERMISSION,
    "ui://hand",
    ViewHtml::embedded(DOC, DOC_SHA256),
    None,
    &["speaker"]
);

fn start(tools: Vec<&'static ToolDef>, views: Vec<&'static ViewDef>) -> Result<(), String> {
    let registry = Registry::from_defs(tools, [], [])
        .and_then(|r| r.with_views(views))
        .map_err(|e| e.to_string())?;
    Server::with_registry(registry)
        .build()
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn a_link_to_a_view_that_does_not_exist_stops_start_up() {
    assert_eq!(start(vec![&TO_HAND], vec![&HAND]), Ok(()));
    assert_eq!(
        start(vec![&TO_NOWHERE], vec![&HAND]),
        Err("tool `linked` at tests/wire_apps.rs:1 (wire_apps): its view `ui://nowhere` is not registered (the views are ui://hand): declare it with #[view(uri = \"ui://nowhere\", html = …)], or link the tool with `ui = TheViewStruct` so that the compiler checks it".into())
    );
    assert_eq!(
        start(vec![&TO_HAND], vec![]),
        Err("tool `linked` at tests/wire_apps.rs:1 (wire_apps): its view `ui://hand` is not registered (no view is registered): declare it with #[view(uri = \"ui://hand\", html = …)], or link the tool with `ui = TheViewStruct` so that the compiler checks it".into())
    );
    assert_eq!(
        start(vec![&BAD_URI], vec![]),
        Err("tool `linked` at tests/wire_apps.rs:1 (wire_apps): invalid view URI \"https://hand\": it does not start with `ui://`; a view's URI is `ui://` followed by a path of URI characters, such as \"ui://weather/card\"".into())
    );
    assert_eq!(
        start(vec![&TWICE_APP], vec![&HAND]),
        Err("tool `linked` at tests/wire_apps.rs:1 (wire_apps): its visibility names `model` or `app` twice".into())
    );
}

#[test]
fn views_written_by_hand_are_checked() {
    assert_eq!(
        start(vec![], vec![&WRONG_DIGEST]),
        Err(format!(
            "view `ui://hand` at tests/wire_apps.rs:1 (wire_apps): the SHA-256 of its HTML is {DOC_SHA256}, not the 00 it declares"
        ))
    );
    assert_eq!(
        start(vec![], vec![&BAD_ORIGIN]),
        Err("view `ui://hand` at tests/wire_apps.rs:1 (wire_apps): `connectDomains` names \"https://api.example.com; script-src *\", which is not an origin: ';' cannot be in an origin; an origin is a scheme (http, https, ws or wss), `://`, a host whose leftmost label may be `*` (\"https://*.example.com\"), and an optional port, with no path".into())
    );
    assert_eq!(
        start(vec![], vec![&BAD_PERMISSION]),
        Err("view `ui://hand` at tests/wire_apps.rs:1 (wire_apps): unknown permission `speaker`; expected camera, microphone, geolocation or clipboardWrite".into())
    );
    assert_eq!(
        start(vec![], vec![&HAND, &HAND]),
        Err("view `ui://hand` at tests/wire_apps.rs:1 (wire_apps): the view at tests/wire_apps.rs:1 (wire_apps) has the same URI; give one of them another".into())
    );
}
