//! The MCP Apps preview of `cargo sake dev` (docs/cli.md, docs/apps.md): `GET /_sake/apps` on
//! the server's own port, served only when `SAKE_DEV_APPS` names the directory `cargo sake
//! dev` wrote the preview's files to. A normal run never sets it, and then no route exists.
//!
//! - `/_sake/apps`: the host page (`index.html`); `/_sake/apps/<file>` its scripts, the
//!   files of [`FILES`] only, read from the directory at each request;
//! - `/_sake/apps/state`: `{"mcp": <the endpoint's path>, "build": <this process>}`: the page
//!   polls it and reloads its view when `build` changes (the server was rebuilt);
//! - `/_sake/apps/sandbox?csp=<base64url JSON>`: the sandbox proxy that loads a view, under the Content
//!   Security Policy built from the view's `_meta.ui.csp` ([`policy`]) as an HTTP header. The
//!   page opens it on the other loopback name of the same port (`localhost` for
//!   `127.0.0.1`, and back): a second origin.
//!
//! Every route answers only a `Host` the endpoint serves (loopback by default): a page of
//! another site cannot rebind a name to it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
#[cfg(test)]
use http::HeaderMap;
use http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::Endpoint;
use super::admission;
use crate::protocol::apps::{Csp, ViewMeta};
use crate::protocol::headers::{Line, RequestHeaders};

/// The variable `cargo sake dev` sets to the preview's directory.
pub(crate) const DEV_APPS: &str = "SAKE_DEV_APPS";
/// Where the preview is served.
pub(crate) const PREFIX: &str = "/_sake/apps";
/// The files the preview serves besides its page, with their media types.
pub(crate) const FILES: [(&str, &str); 5] = [
    ("host.mjs", "text/javascript; charset=utf-8"),
    ("form.mjs", "text/javascript; charset=utf-8"),
    ("bridge.js", "text/javascript; charset=utf-8"),
    ("sandbox.js", "text/javascript; charset=utf-8"),
    ("host.css", "text/css; charset=utf-8"),
];
/// The largest file the preview serves (the bridge is about 0.7 MB).
const MAX_FILE: u64 = 8 << 20;

/// The preview's directory and this process's build id.
#[derive(Debug)]
struct Preview {
    dir: PathBuf,
    build: String,
}

/// The routes, when `SAKE_DEV_APPS` names a directory (`cargo sake dev`); none otherwise.
pub(crate) fn routes() -> Option<Router<Arc<Endpoint>>> {
    let dir = std::env::var_os(DEV_APPS).filter(|d| !d.is_empty())?;
    Some(routes_in(PathBuf::from(dir)))
}

/// The routes serving the preview from `dir`.
fn routes_in(dir: PathBuf) -> Router<Arc<Endpoint>> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let preview = Arc::new(Preview {
        dir,
        build: format!("{}-{nanos}", std::process::id()),
    });
    let p = preview.clone();
    let mut router = Router::new()
        .route(
            PREFIX,
            axum::routing::get(move |State(ep): State<Arc<Endpoint>>, req: Request| {
                let p = p.clone();
                async move { page(&ep, &req, &p) }
            }),
        )
        .route(
            &format!("{PREFIX}/state"),
            axum::routing::get({
                let p = preview.clone();
                move |State(ep): State<Arc<Endpoint>>, req: Request| {
                    let p = p.clone();
                    async move { state(&ep, &req, &p) }
                }
            }),
        )
        .route(
            &format!("{PREFIX}/sandbox"),
            axum::routing::get({
                let p = preview.clone();
                move |State(ep): State<Arc<Endpoint>>, req: Request| {
                    let p = p.clone();
                    async move { sandbox(&ep, &req, &p) }
                }
            }),
        );
    for (name, media) in FILES {
        let p = preview.clone();
        router = router.route(
            &format!("{PREFIX}/{name}"),
            axum::routing::get(move |State(ep): State<Arc<Endpoint>>, req: Request| {
                let p = p.clone();
                async move { file(&ep, &req, &p.dir, name, media, None) }
            }),
        );
    }
    router
}

/// 403 unless the request's `Host` is one the endpoint serves.
fn refused(ep: &Endpoint, req: &Request) -> Option<Response> {
    let host_only = RequestHeaders {
        origin: Line::default(),
        ..RequestHeaders::new(req.headers())
    };
    admission::check_origin(&ep.http.hosts, &[], &host_only)
        .err()
        .map(|e| plain(StatusCode::FORBIDDEN, &e.message))
}

fn plain(status: StatusCode, message: &str) -> Response {
    respond(
        status,
        "text/plain; charset=utf-8",
        Body::from(message.to_owned()),
    )
}

fn respond(status: StatusCode, media: &'static str, body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(media));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    resp
}

/// One of the preview's files, with `csp` as its policy when given.
fn file(
    ep: &Endpoint,
    req: &Request,
    dir: &Path,
    name: &str,
    media: &'static str,
    csp: Option<String>,
) -> Response {
    if let Some(r) = refused(ep, req) {
        return r;
    }
    let path = dir.join(name);
    let read = std::fs::metadata(&path).and_then(|m| {
        if m.len() > MAX_FILE {
            Err(std::io::Error::other("too large"))
        } else {
            std::fs::read(&path)
        }
    });
    match read {
        Ok(bytes) => {
            let mut resp = respond(StatusCode::OK, media, Body::from(bytes));
            if let Some(v) = csp.and_then(|c| HeaderValue::from_str(&c).ok()) {
                resp.headers_mut().insert(CONTENT_SECURITY_POLICY, v);
            }
            resp
        }
        Err(e) => plain(
            StatusCode::NOT_FOUND,
            &format!(
                "the MCP Apps preview has no {name} in {} ({e}): restart `cargo sake dev`",
                dir.display()
            ),
        ),
    }
}

/// The page: never inside another page's frame.
fn page(ep: &Endpoint, req: &Request, p: &Preview) -> Response {
    let html = "text/html; charset=utf-8";
    let mut resp = file(ep, req, &p.dir, "index.html", html, None);
    resp.headers_mut()
        .insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    resp
}

fn state(ep: &Endpoint, req: &Request, p: &Preview) -> Response {
    if let Some(r) = refused(ep, req) {
        return r;
    }
    let doc = json!({"mcp": ep.http.path, "build": p.build});
    respond(
        StatusCode::OK,
        "application/json",
        Body::from(doc.to_string()),
    )
}

/// The view's `_meta.ui.csp` a sandbox URL carries: `csp=` and the JSON in unpadded
/// base64url; `None` when absent or not JSON.
fn csp_of(query: Option<&str>) -> Option<Value> {
    let encoded = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("csp="))?
        .trim_end_matches('=');
    let json = URL_SAFE_NO_PAD.decode(encoded).ok()?;
    serde_json::from_slice(&json).ok()
}

fn sandbox(ep: &Endpoint, req: &Request, p: &Preview) -> Response {
    let csp = csp_of(req.uri().query());
    let policy = policy(csp.as_ref().filter(|c| c.is_object()));
    file(
        ep,
        req,
        &p.dir,
        "sandbox.html",
        "text/html; charset=utf-8",
        Some(policy),
    )
}

/// The Content Security Policy of a view whose `_meta.ui.csp` is `csp`, as the MCP Apps
/// specification builds it (`ViewMeta::content_security_policy`): the restrictive default
/// without one, or with one that is not a `csp` object; entries that are not origins are left
/// out.
pub(crate) fn policy(csp: Option<&Value>) -> String {
    let csp = csp.and_then(|c| serde_json::from_value::<Csp>(c.clone()).ok());
    ViewMeta {
        csp,
        ..ViewMeta::default()
    }
    .content_security_policy()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;
    use crate::service::Server;
    use tower::ServiceExt as _;

    fn endpoint() -> Arc<Endpoint> {
        let registry = Registry::from_defs([], [], []).unwrap();
        Server::with_registry(registry).build().unwrap().endpoint
    }

    async fn get(router: &Router, uri: &str, host: &str) -> (u16, HeaderMap, String) {
        let req = http::Request::builder()
            .uri(uri)
            .header("host", host)
            .body(Body::empty())
            .unwrap();
        let resp = router.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn a_normal_run_serves_no_preview() {
        // The test process never sets SAKE_DEV_APPS: the endpoint's router is a normal run's.
        assert!(std::env::var_os(DEV_APPS).is_none());
        let router = super::super::router(endpoint());
        for uri in [
            PREFIX,
            "/_sake/apps/state",
            "/_sake/apps/sandbox",
            "/_sake/apps/host.mjs",
        ] {
            let (status, _, body) = get(&router, uri, "127.0.0.1:3000").await;
            assert_eq!((status, body.as_str()), (404, ""), "{uri}");
        }
    }

    #[tokio::test]
    async fn under_dev_the_preview_is_served_from_its_directory() {
        let dir = std::env::temp_dir().join(format!("sake-dev-apps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), "<!DOCTYPE html><title>page</title>").unwrap();
        std::fs::write(
            dir.join("sandbox.html"),
            "<!DOCTYPE html><title>sandbox</title>",
        )
        .unwrap();
        std::fs::write(dir.join("host.mjs"), "export {};").unwrap();
        let router = Router::new()
            .merge(routes_in(dir.clone()))
            .with_state(endpoint());

        let (status, headers, body) = get(&router, PREFIX, "127.0.0.1:3000").await;
        assert_eq!(
            (status, body.as_str()),
            (200, "<!DOCTYPE html><title>page</title>")
        );
        assert_eq!(headers[CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(headers[CACHE_CONTROL], "no-store");
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY");
        assert!(headers.get(CONTENT_SECURITY_POLICY).is_none());

        let (status, headers, body) = get(&router, "/_sake/apps/host.mjs", "localhost:3000").await;
        assert_eq!((status, body.as_str()), (200, "export {};"));
        assert_eq!(headers[CONTENT_TYPE], "text/javascript; charset=utf-8");

        let (status, _, body) = get(&router, "/_sake/apps/state", "localhost:3000").await;
        assert_eq!(status, 200);
        let state: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(state["mcp"], "/mcp");
        let build = state["build"].as_str().unwrap();
        assert!(
            build.starts_with(&format!("{}-", std::process::id())),
            "{build}"
        );
        // Another process (a rebuilt server) has another build.
        let other = Router::new()
            .merge(routes_in(dir.clone()))
            .with_state(endpoint());
        let (_, _, body) = get(&other, "/_sake/apps/state", "localhost:3000").await;
        assert_ne!(
            serde_json::from_str::<Value>(&body).unwrap()["build"],
            build
        );

        // The sandbox carries the view's policy; a csp that is not an object gets the default.
        let csp = r#"{"connectDomains":["https://api.example.com"]}"#;
        let uri = format!(
            "/_sake/apps/sandbox?x=1&csp={}==",
            URL_SAFE_NO_PAD.encode(csp)
        );
        let (status, headers, body) = get(&router, &uri, "localhost:3000").await;
        assert_eq!(
            (status, body.as_str()),
            (200, "<!DOCTYPE html><title>sandbox</title>")
        );
        assert_eq!(
            headers[CONTENT_SECURITY_POLICY],
            policy(Some(
                &json!({"connectDomains": ["https://api.example.com"]})
            ))
            .as_str()
        );
        let null = format!("/_sake/apps/sandbox?csp={}", URL_SAFE_NO_PAD.encode("null"));
        let list = format!("/_sake/apps/sandbox?csp={}", URL_SAFE_NO_PAD.encode("[]"));
        for uri in [
            "/_sake/apps/sandbox",
            "/_sake/apps/sandbox?csp=%7B",
            &null,
            &list,
        ] {
            let (_, headers, _) = get(&router, uri, "localhost:3000").await;
            assert_eq!(
                headers[CONTENT_SECURITY_POLICY],
                policy(None).as_str(),
                "{uri}"
            );
        }

        // Only the preview's files; a file missing says what to do.
        for uri in [
            "/_sake/apps/../index.html",
            "/_sake/apps/index.html/x",
            "/_sake/apps/secret",
        ] {
            let (status, _, _) = get(&router, uri, "localhost:3000").await;
            assert_eq!(status, 404, "{uri}");
        }
        let (status, _, body) = get(&router, "/_sake/apps/bridge.js", "localhost:3000").await;
        assert_eq!(status, 404);
        assert!(
            body.starts_with("the MCP Apps preview has no bridge.js in "),
            "{body}"
        );
        assert!(body.ends_with("restart `cargo sake dev`"), "{body}");

        // A name that is not the endpoint's (DNS rebinding) is refused.
        for uri in [
            PREFIX,
            "/_sake/apps/state",
            "/_sake/apps/sandbox",
            "/_sake/apps/host.mjs",
        ] {
            let (status, _, _) = get(&router, uri, "evil.example:3000").await;
            assert_eq!(status, 403, "{uri}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_view_without_csp_gets_the_restrictive_default() {
        assert_eq!(
            policy(None),
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
             img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; \
             object-src 'none'; base-uri 'self'"
        );
    }

    #[test]
    fn declared_domains_join_their_directives_and_anything_else_is_left_out() {
        let csp = json!({
            "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
            "resourceDomains": ["https://*.cdn.example", "https://evil.example; script-src *",
                "javascript:alert(1)", "https://x.example/path"],
            "frameDomains": ["https://youtube.com/"],
        });
        assert_eq!(
            policy(Some(&csp)),
            "default-src 'none'; script-src 'self' 'unsafe-inline' https://*.cdn.example; \
             style-src 'self' 'unsafe-inline' https://*.cdn.example; \
             connect-src 'self' https://api.example.com wss://live.example.com:8443; \
             img-src 'self' data: https://*.cdn.example; font-src 'self' https://*.cdn.example; \
             media-src 'self' data: https://*.cdn.example; frame-src https://youtube.com/; \
             object-src 'none'; base-uri 'self'"
        );
        // Not a csp: the default.
        let not_csp = json!({"connectDomains": "https://api.example.com", "resourceDomains": [7]});
        assert_eq!(policy(Some(&not_csp)), policy(None));
        assert_eq!(
            policy(Some(&json!({}))),
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:; font-src 'self'; media-src 'self' data:; \
             frame-src 'none'; object-src 'none'; base-uri 'self'"
        );
    }
}
