//! The user step of the authorization code flow: a person signs in at the authorization
//! server and is redirected back to the client. [`UserStep`] is what an application
//! implements; [`LoopbackBrowser`] opens a browser and receives the redirect on 127.0.0.1
//! (RFC 8252 section 7.3); [`Headless`] follows the redirects over HTTP, for tests and
//! authorization servers that sign in without a person.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, COOKIE, LOCATION, SET_COOKIE};
use http::{HeaderMap, HeaderValue, Method};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::OAuthError;
use super::urls::{is_redirect_to, query_params, resolve};
use crate::net::fetch::{Fetcher, Limits};

/// The future a [`UserStep`] returns.
pub type UserStepFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Callback, OAuthError>> + Send + 'a>>;

/// How the user signs in: the application shows the authorization URL to a person (a browser,
/// a QR code, a link in a chat) and hands back what the authorization server redirected to.
///
/// ```
/// use sake::client::auth::{Callback, OAuthError, UserStep, UserStepFuture};
///
/// /// Prints the URL and reads the redirected URL the user pastes back.
/// struct Paste;
///
/// impl UserStep for Paste {
///     fn redirect_uri(&self) -> String {
///         "http://127.0.0.1:8765/callback".into()
///     }
///
///     fn authorize<'a>(&'a self, url: &'a str) -> UserStepFuture<'a> {
///         Box::pin(async move {
///             println!("Sign in at {url}, then paste the address you land on:");
///             let mut line = String::new();
///             std::io::stdin()
///                 .read_line(&mut line)
///                 .map_err(|e| OAuthError::UserStep { reason: e.to_string() })?;
///             Ok(Callback::from_url(line.trim()))
///         })
///     }
/// }
/// ```
pub trait UserStep: Send + Sync {
    /// Where the authorization server sends the user back: registered with it, and sent
    /// with every authorization request. Loopback (`http://127.0.0.1:…`) or https.
    fn redirect_uri(&self) -> String;

    /// Has the user visit `authorization_url`, and returns the parameters of the redirect to
    /// [`redirect_uri`](UserStep::redirect_uri).
    fn authorize<'a>(&'a self, authorization_url: &'a str) -> UserStepFuture<'a>;
}

/// The parameters the authorization server redirected back with (`code`, `state`, `iss`, or
/// `error`).
#[derive(Clone, PartialEq, Eq)]
pub struct Callback {
    params: Vec<(String, String)>,
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Callback");
        for (k, v) in &self.params {
            if k == "code" {
                d.field(k, &"…");
            } else {
                d.field(k, v);
            }
        }
        d.finish()
    }
}

impl Callback {
    /// The parameters of the redirected URL's query.
    pub fn from_url(url: &str) -> Self {
        Callback {
            params: query_params(url),
        }
    }

    /// These parameters.
    pub fn from_params<I, K, V>(params: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Callback {
            params: params
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A parameter (the first, if repeated).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// How many times a parameter appears.
    pub(crate) fn count(&self, name: &str) -> usize {
        self.params.iter().filter(|(k, _)| k == name).count()
    }
}

/// The path of the loopback redirect URI.
const CALLBACK_PATH: &str = "/callback";
/// The longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;
/// The most connections served while waiting for the redirect (favicon requests and the like).
const MAX_CONNECTIONS: usize = 64;

/// The user signs in with a browser; the redirect comes back to a port on 127.0.0.1 (RFC 8252
/// section 7.3). The URL is printed on stderr and, unless disabled, opened with the system's
/// browser (`xdg-open`, `open`, or the Windows URL handler).
///
/// The port is bound when the value is made, so that the redirect URI is known before the
/// client registers: [`LoopbackBrowser::new`] takes any free port, [`LoopbackBrowser::bind`] a
/// fixed one (for an authorization server that does not accept any loopback port, or a
/// persisted registration).
pub struct LoopbackBrowser {
    listener: std::net::TcpListener,
    port: u16,
    open: bool,
    timeout: Duration,
    /// One sign-in at a time: the port receives one redirect.
    busy: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for LoopbackBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackBrowser")
            .field("redirect_uri", &self.redirect_uri())
            .field("open", &self.open)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl LoopbackBrowser {
    /// Listens on a free port of 127.0.0.1.
    pub fn new() -> std::io::Result<Self> {
        Self::bind(0)
    }

    /// Listens on `port` of 127.0.0.1 (0: any free port).
    pub fn bind(port: u16) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackBrowser {
            listener,
            port,
            open: true,
            timeout: Duration::from_secs(300),
            busy: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether to open the system's browser (default `true`); the URL is printed either way.
    pub fn open_browser(mut self, open: bool) -> Self {
        self.open = open;
        self
    }

    /// How long to wait for the redirect (default 5 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn open_system_browser(url: &str) {
        let mut cmd = if cfg!(target_os = "macos") {
            let mut c = std::process::Command::new("open");
            c.arg(url);
            c
        } else if cfg!(windows) {
            let mut c = std::process::Command::new("rundll32");
            c.arg("url.dll,FileProtocolHandler").arg(url);
            c
        } else {
            let mut c = std::process::Command::new("xdg-open");
            c.arg(url);
            c
        };
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        match cmd.spawn() {
            Ok(mut child) => {
                // Reap it in the background; its exit status does not matter.
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
            }
            Err(e) => tracing::debug!("could not open a browser: {e}"),
        }
    }

    async fn receive(&self) -> Result<Callback, OAuthError> {
        let listener = self
            .listener
            .try_clone()
            .and_then(tokio::net::TcpListener::from_std)
            .map_err(|e| OAuthError::user_step(format!("cannot listen for the redirect: {e}")))?;
        for _ in 0..MAX_CONNECTIONS {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| OAuthError::user_step(format!("cannot accept the redirect: {e}")))?;
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            let read = tokio::time::timeout(Duration::from_secs(10), async {
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
                    let n = stream.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            if !matches!(read, Ok(Ok(()))) {
                continue;
            }
            let line = String::from_utf8_lossy(&head);
            let target = line
                .lines()
                .next()
                .and_then(|l| {
                    let mut parts = l.split(' ');
                    (parts.next() == Some("GET"))
                        .then(|| parts.next())
                        .flatten()
                })
                .unwrap_or("");
            let path = target.split('?').next().unwrap_or("");
            if path != CALLBACK_PATH {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let callback = Callback::from_url(target);
            let page = if callback.get("error").is_some() {
                "<!doctype html><title>Not signed in</title><p>The authorization was not granted. You can close this window and return to the application.</p>"
            } else {
                "<!doctype html><title>Signed in</title><p>Signed in. You can close this window and return to the application.</p>"
            };
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
            return Ok(callback);
        }
        Err(OAuthError::user_step(format!(
            "{MAX_CONNECTIONS} requests reached the loopback port without the redirect"
        )))
    }
}

impl UserStep for LoopbackBrowser {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    fn authorize<'a>(&'a self, authorization_url: &'a str) -> UserStepFuture<'a> {
        Box::pin(async move {
            let _one = self.busy.lock().await;
            eprintln!("Open this address in a browser to sign in:\n\n    {authorization_url}\n");
            if self.open {
                Self::open_system_browser(authorization_url);
            }
            tokio::time::timeout(self.timeout, self.receive())
                .await
                .unwrap_or_else(|_| {
                    Err(OAuthError::user_step(format!(
                        "no redirect reached {} within {:?}",
                        self.redirect_uri(),
                        self.timeout
                    )))
                })
        })
    }
}

/// The most redirects a [`Headless`] step follows, and the most cookies it keeps.
const MAX_HOPS: usize = 16;
const MAX_COOKIES: usize = 64;
const MAX_COOKIE_LEN: usize = 4096;

/// Follows the authorization server's redirects over HTTP, keeping its cookies, until the
/// redirect URI: no person and no browser. For tests, and for authorization servers that
/// authorize without an interactive sign-in. A page that is not a redirect (a login form)
/// ends the step with an error that says so.
#[derive(Debug, Clone)]
pub struct Headless {
    redirect_uri: String,
    timeout: Duration,
}

impl Default for Headless {
    fn default() -> Self {
        Headless::new()
    }
}

impl Headless {
    /// Redirects to `http://127.0.0.1/callback` (never listened on: the redirect is read from
    /// the `Location` header).
    pub fn new() -> Self {
        Headless::with_redirect_uri("http://127.0.0.1/callback")
    }

    /// Redirects to `redirect_uri`.
    pub fn with_redirect_uri(redirect_uri: impl Into<String>) -> Self {
        Headless {
            redirect_uri: redirect_uri.into(),
            timeout: Duration::from_secs(10),
        }
    }

    /// The longest wait for each page (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The host part of a URL, for keeping cookies per host.
fn host_of(url: &str) -> String {
    url.parse::<http::Uri>()
        .ok()
        .and_then(|u| u.authority().map(|a| a.as_str().to_ascii_lowercase()))
        .unwrap_or_default()
}

impl UserStep for Headless {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(&'a self, authorization_url: &'a str) -> UserStepFuture<'a> {
        Box::pin(async move {
            let fetcher = Fetcher::new(Limits {
                timeout: self.timeout,
                max_bytes: 1 << 20,
            })
            .map_err(OAuthError::user_step)?;
            let cookies: Mutex<HashMap<(String, String), String>> = Mutex::new(HashMap::new());
            let mut url = authorization_url.to_owned();
            for _ in 0..MAX_HOPS {
                if is_redirect_to(&url, &self.redirect_uri) {
                    return Ok(Callback::from_url(&url));
                }
                let host = host_of(&url);
                let mut headers = HeaderMap::new();
                headers.insert(ACCEPT, HeaderValue::from_static("text/html, */*"));
                let jar = cookies
                    .lock()
                    .map(|c| {
                        c.iter()
                            .filter(|((h, _), _)| *h == host)
                            .map(|((_, n), v)| format!("{n}={v}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .unwrap_or_default();
                if !jar.is_empty()
                    && let Ok(v) = HeaderValue::from_str(&jar)
                {
                    headers.insert(COOKIE, v);
                }
                let response = fetcher
                    .send(Method::GET, &url, headers, Bytes::new())
                    .await
                    .map_err(|e| OAuthError::user_step(e.to_string()))?;
                if let Ok(mut jar) = cookies.lock() {
                    for c in response.headers.get_all(SET_COOKIE) {
                        let Ok(c) = c.to_str() else { continue };
                        let pair = c.split(';').next().unwrap_or("");
                        if let Some((name, value)) = pair.split_once('=')
                            && value.len() <= MAX_COOKIE_LEN
                            && (jar.len() < MAX_COOKIES
                                || jar.contains_key(&(host.clone(), name.trim().to_owned())))
                        {
                            jar.insert((host.clone(), name.trim().to_owned()), value.to_owned());
                        }
                    }
                }
                let location = response
                    .headers
                    .get(LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .filter(|_| response.status.is_redirection());
                let Some(location) = location else {
                    return Err(OAuthError::user_step(format!(
                        "the authorization server answered {} at {} instead of redirecting: it wants a person to sign in, which a headless step cannot do (use LoopbackBrowser)",
                        response.status,
                        url.split('?').next().unwrap_or("")
                    )));
                };
                url = resolve(&url, location);
            }
            Err(OAuthError::user_step(format!(
                "more than {MAX_HOPS} redirects without reaching {}",
                self.redirect_uri
            )))
        })
    }
}
