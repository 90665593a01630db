//! MCP Apps in a real browser: `examples/apps.rs` over HTTP, a test host page built with the
//! official host bridge (`AppBridge` of `@modelcontextprotocol/ext-apps`) and the TypeScript
//! SDK client, and Debian's `chromium`, headless, driven by `playwright-core` (both pinned;
//! no browser download): `tests/apps/browser.mjs` serves the host and its sandbox proxy on
//! two loopback origins and drives the browser.
//!
//! In both eras (2026-07-28 and a 2025-11-25 handshake), the host connects declaring the
//! extension, lists the tools with their `_meta.ui`, reads the view, loads it in the sandbox
//! under the policy built from its own `_meta.ui.csp`; the view completes `ui/initialize`,
//! receives the tool's input and result and renders them; a click on its first `<button>`
//! calls the app-only tool through the host and the page changes. The view reaches nothing
//! outside itself (a fetch from it is a CSP violation), and no request leaves the three
//! loopback origins. A page on a loopback origin the server does not name cannot call it.
//! Before the browser, the same CORS rules are checked on the wire, exactly.
//!
//! Screenshots of each era, before and after the click, are kept in
//! `target/apps-browser/` (docs/apps.md shows one).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sake_tests::{example_binary, node, raw, same};
use serde_json::{Value, json};

/// Where Debian's chromium is (`scripts/debian.sh chromium chromium` installs it).
const CHROMIUM: &str = "/usr/bin/chromium";

/// `examples/apps.rs` serving HTTP on `port`, killed when dropped.
struct Example {
    _child: tokio::process::Child,
    url: String,
}

impl Example {
    async fn start(port: u16, allowed_origins: &str) -> Example {
        let child = tokio::process::Command::new(example_binary("apps"))
            .env("PORT", port.to_string())
            .env("ALLOWED_ORIGINS", allowed_origins)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning the apps example");
        raw::wait_until_listening(port, "the apps example").await;
        Example {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

/// `target/apps-browser/`: where the screenshots are kept.
fn artifacts() -> PathBuf {
    // The test runs from <target>/<profile>/deps/<test>-<hash>.
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_path_buf();
    let dir = target.join("apps-browser");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn discover_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

/// The CORS rules of the example on the wire: the host's origin is granted, an unlisted
/// loopback origin is served without a grant (and its preflight refused), a foreign origin is
/// refused with 403.
async fn cors_on_the_wire(url: &str, host: &str, unlisted: &str) {
    let http = reqwest::Client::new();
    let preflight = |origin: &str| {
        http.request(reqwest::Method::OPTIONS, url)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type,mcp-protocol-version,mcp-method,mcp-name",
            )
            .send()
    };
    let post = |origin: &str| {
        http.post(url)
            .header("origin", origin)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .body(discover_body())
            .send()
    };

    let granted = preflight(host).await.unwrap();
    assert_eq!(granted.status(), 204);
    assert_eq!(header(&granted, "access-control-allow-origin"), Some(host));
    assert_eq!(
        header(&granted, "access-control-allow-methods"),
        Some("GET, POST, DELETE")
    );
    assert_eq!(
        header(&granted, "access-control-allow-headers"),
        Some(
            "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID"
        )
    );
    let served = post(host).await.unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(header(&served, "access-control-allow-origin"), Some(host));
    assert_eq!(
        header(&served, "access-control-expose-headers"),
        Some("Mcp-Session-Id, WWW-Authenticate, Retry-After")
    );

    let refused = preflight(unlisted).await.unwrap();
    assert_eq!(refused.status(), 403);
    assert_eq!(header(&refused, "access-control-allow-origin"), None);
    let served = post(unlisted).await.unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(header(&served, "access-control-allow-origin"), None);
    assert_eq!(header(&served, "vary"), Some("Origin"));

    let foreign = post("https://evil.example").await.unwrap();
    assert_eq!(foreign.status(), 403);
    assert_eq!(header(&foreign, "access-control-allow-origin"), None);
    same(
        foreign.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "error": {"code": -32000,
            "message": "Forbidden: Origin \"https://evil.example\" is not allowed; configure Server::allowed_origins (Server::cors for browser pages)"}}),
    );
}

/// What one era of the browser run must show: `label` counted from 0 to 1.
fn check_era(run: &Value, era: &str, revision: &str, label: &str) {
    let host = &run["host"];
    assert_eq!(host["state"], "rendered", "{era}: {host:#}");
    same(
        &host["steps"],
        json!([
            "connected",
            "tools",
            "view read",
            "sandbox ready",
            "view initialized",
            "tool input sent",
            "tool result sent",
            "app called"
        ]),
    );
    assert_eq!(host["protocolVersion"], revision, "{era}");
    same(
        &host["serverCapabilities"],
        json!({"logging": {}, "resources": {"subscribe": true, "listChanged": true},
               "tools": {"listChanged": true},
               "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}),
    );
    same(
        &host["tools"],
        json!([
            {"name": "add_to_tally", "_meta": {
                "ui": {"resourceUri": "ui://tally/view", "visibility": ["app"]},
                "ui/resourceUri": "ui://tally/view"}},
            {"name": "show_tally", "_meta": {
                "ui": {"resourceUri": "ui://tally/view", "visibility": ["model", "app"]},
                "ui/resourceUri": "ui://tally/view"}},
        ]),
    );
    let html = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/apps/tally.html"),
    )
    .unwrap();
    same(
        &host["view"],
        json!({"uri": "ui://tally/view", "mimeType": "text/html;profile=mcp-app",
               "meta": {"ui": {"prefersBorder": false}}, "bytes": html.encode_utf16().count()}),
    );
    same(
        &host["appInfo"],
        json!({"name": "tally-view", "version": "1.0.0"}),
    );
    same(
        &host["appCapabilities"],
        json!({"availableDisplayModes": ["inline"]}),
    );
    // 2026-07-28 results carry the server's identity; the handshake revision's do not.
    let server_info = |mut result: Value| {
        if revision == "2026-07-28" {
            result["_meta"] =
                json!({"io.modelcontextprotocol/serverInfo": {"name": "apps", "version": "0.1.0"}});
        }
        result
    };
    same(
        &host["toolResult"],
        server_info(
            json!({"content": [{"type": "text", "text": format!("{label}: 0")}],
                           "structuredContent": {"label": label, "count": 0}}),
        ),
    );
    same(
        &host["appCalls"],
        json!([{"name": "add_to_tally", "arguments": {"label": label},
                "result": server_info(json!({
                    "content": [{"type": "text", "text": format!("{label}: 1")}],
                    "structuredContent": {"label": label, "count": 1}}))}]),
    );
    let sizes = host["sizes"].as_array().unwrap();
    assert!(
        !sizes.is_empty()
            && sizes
                .iter()
                .all(|s| s["width"].as_u64() > Some(0) && s["height"].as_u64() > Some(0)),
        "{era}: the view reports its size: {sizes:?}"
    );
    // What the page shows: the tool's input and result, then the app-only tool's answer.
    assert_eq!(
        run["before"],
        format!("{label}\n\n0\n\n+1\n\n{label}: 0"),
        "{era}"
    );
    assert_eq!(run["buttonText"], "+1");
    assert_eq!(
        run["after"],
        format!("{label}\n\n1\n\n+1\n\n{label}: 1"),
        "{era}"
    );
    // The view runs under the policy of its `_meta.ui` (no csp: nothing outside itself).
    same(
        &run["probe"],
        json!({"violated": "connect-src", "blocked": "http://127.0.0.1:9/probe"}),
    );
    for line in run["console"].as_array().unwrap() {
        let line = line.as_str().unwrap();
        assert!(
            line.contains("http://127.0.0.1:9/probe") && line.contains("Content Security Policy"),
            "{era}: an error in the browser's console other than the CSP probe's: {line}"
        );
    }
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.len() > 2048 && b.starts_with(b"\x89PNG\r\n\x1a\n"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_view_works_in_chromium_under_the_official_host_bridge_in_both_eras() {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: run the tests through scripts/test.sh, which installs Debian's chromium (scripts/debian.sh chromium chromium)"
    );
    let (host_port, sandbox_port) = (raw::free_port(), raw::free_port());
    let host = format!("http://127.0.0.1:{host_port}");
    let unlisted = format!("http://127.0.0.1:{sandbox_port}");
    let example = Example::start(raw::free_port(), &host).await;
    cors_on_the_wire(&example.url, &host, &unlisted).await;

    let out = artifacts();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/browser.mjs");
    let (hp, sp) = (host_port.to_string(), sandbox_port.to_string());
    let args: Vec<&OsStr> = vec![
        OsStr::new(&example.url),
        OsStr::new(&hp),
        OsStr::new(&sp),
        out.as_os_str(),
    ];
    let run = node::run_file(
        &script,
        &args,
        &[("SAKE_CHROMIUM", OsStr::new(CHROMIUM))],
        Duration::from_secs(180),
    )
    .await;
    let run: Value = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the browser driver printed no JSON ({e}):\n{}\n{}",
            run.stdout, run.stderr
        )
    });
    check_era(&run["modern"], "modern", "2026-07-28", "Cups of tea");
    check_era(&run["legacy"], "legacy", "2025-11-25", "Pages read");
    same(
        &run["unlisted"],
        json!({"refused": "TypeError: Failed to fetch"}),
    );
    same(&run["origins"], run["expectedOrigins"].clone());
    // The only failed request: the unlisted origin's preflight, refused.
    same(
        &run["failedRequests"],
        json!([{"url": example.url, "failure": "net::ERR_FAILED"}]),
    );
    for shot in [
        "modern-before",
        "modern-after",
        "legacy-before",
        "legacy-after",
    ] {
        let path = out.join(format!("{shot}.png"));
        assert!(is_png(&path), "{} is not a screenshot", path.display());
    }
}
