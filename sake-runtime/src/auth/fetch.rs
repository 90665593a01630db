//! A small HTTP(S) client for talking to authorization servers: GET a JSON document, POST a
//! form. hyper's pooled client, TLS through rustls (ring, Mozilla's roots, no process-wide
//! provider needed), plain `http` allowed (loopback test servers). Every exchange has a
//! deadline and a body limit, and redirects are not followed (a 3xx is an answer like any
//! other: metadata and key sets are fetched from exactly the configured URLs).

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::{HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

const UA: &str = concat!("sake/", env!("CARGO_PKG_VERSION"));

/// Why an exchange produced no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// The URL is not an absolute `http`/`https` URL.
    InvalidUrl { url: String, reason: String },
    /// No answer: connection refused, DNS, TLS, a broken connection, or the deadline.
    Unreachable { url: String, reason: String },
    /// The body is longer than the limit.
    TooLarge { url: String, limit: usize },
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUrl { url, reason } => write!(f, "{url:?} is not a usable URL: {reason}"),
            Self::Unreachable { url, reason } => write!(f, "{url} is unreachable: {reason}"),
            Self::TooLarge { url, limit } => {
                write!(f, "the answer of {url} is longer than {limit} bytes")
            }
        }
    }
}

/// An answer: its status and (bounded) body.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

/// Limits of a [`Fetcher`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The deadline of one exchange, from connecting to the end of the body.
    pub(crate) timeout: Duration,
    /// The longest body read.
    pub(crate) max_bytes: usize,
}

/// Credentials sent with a form POST.
#[derive(Clone, Copy)]
pub(crate) enum FormAuth<'a> {
    /// `client_secret_basic` (RFC 6749 section 2.3.1): `Authorization: Basic`, each part
    /// form-urlencoded first.
    Basic { id: &'a str, secret: &'a str },
    /// `client_secret_post`: `client_id` and `client_secret` in the form.
    Post { id: &'a str, secret: &'a str },
}

/// The HTTP(S) client. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub(crate) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    limits: Limits,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A client with these limits. Fails only if rustls cannot set up its TLS configuration.
    pub(crate) fn new(limits: Limits) -> Result<Self, String> {
        let provider = rustls::crypto::ring::default_provider();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| format!("cannot set up TLS: {e}"))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(4)
            .build(https);
        Ok(Self { client, limits })
    }

    /// GETs `url`, asking for JSON.
    pub(crate) async fn get(&self, url: &str) -> Result<Response, FetchError> {
        let uri = parse(url)?;
        let request = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(USER_AGENT, HeaderValue::from_static(UA))
            .body(Full::new(Bytes::new()))
            .map_err(|e| invalid(url, e.to_string()))?;
        self.exchange(url, request).await
    }

    /// POSTs `fields` as `application/x-www-form-urlencoded`, with `auth`.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        fields: &[(&str, &str)],
        auth: FormAuth<'_>,
    ) -> Result<Response, FetchError> {
        let uri = parse(url)?;
        let mut body = String::new();
        let mut add = |k: &str, v: &str| {
            if !body.is_empty() {
                body.push('&');
            }
            form_encode(k, &mut body);
            body.push('=');
            form_encode(v, &mut body);
        };
        for (k, v) in fields {
            add(k, v);
        }
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(USER_AGENT, HeaderValue::from_static(UA))
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
        match auth {
            FormAuth::Basic { id, secret } => {
                let mut pair = String::new();
                form_encode(id, &mut pair);
                pair.push(':');
                form_encode(secret, &mut pair);
                let value = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                );
                let value = HeaderValue::from_str(&value)
                    .map_err(|e| invalid(url, format!("client credentials: {e}")))?;
                builder = builder.header(AUTHORIZATION, value);
            }
            FormAuth::Post { id, secret } => {
                add("client_id", id);
                add("client_secret", secret);
            }
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| invalid(url, e.to_string()))?;
        self.exchange(url, request).await
    }

    async fn exchange(
        &self,
        url: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<Response, FetchError> {
        let limit = self.limits.max_bytes;
        let work = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| unreachable(url, describe(&e)))?;
            let status = response.status();
            let mut body = response.into_body();
            let mut out = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| unreachable(url, e.to_string()))?;
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > limit {
                        return Err(FetchError::TooLarge {
                            url: url.to_owned(),
                            limit,
                        });
                    }
                    out.extend_from_slice(&data);
                }
            }
            Ok(Response {
                status,
                body: Bytes::from(out),
            })
        };
        match tokio::time::timeout(self.limits.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(unreachable(
                url,
                format!("no complete answer within {:?}", self.limits.timeout),
            )),
        }
    }
}

/// The error chain of a hyper client error, which alone says only "client error (Connect)".
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn invalid(url: &str, reason: impl Into<String>) -> FetchError {
    FetchError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.into(),
    }
}

fn unreachable(url: &str, reason: impl Into<String>) -> FetchError {
    FetchError::Unreachable {
        url: url.to_owned(),
        reason: reason.into(),
    }
}

/// Parses an absolute `http`/`https` URL with a host and no fragment.
pub(crate) fn parse(url: &str) -> Result<Uri, FetchError> {
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(url, e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(invalid(url, "only http:// and https:// URLs are fetched")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid(url, "the URL names no host"));
    }
    if url.contains('#') {
        return Err(invalid(url, "the URL has a fragment"));
    }
    Ok(uri)
}

/// Appends `s` form-urlencoded (the `application/x-www-form-urlencoded` serializer of the
/// WHATWG URL standard: unreserved bytes kept, space as `+`, the rest percent-encoded).
pub(crate) fn form_encode(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding() {
        let mut s = String::new();
        form_encode("a b&c=d/é~*", &mut s);
        assert_eq!(s, "a+b%26c%3Dd%2F%C3%A9%7E*");
    }

    #[test]
    fn urls() {
        assert!(parse("https://as.example/jwks").is_ok());
        assert!(parse("http://127.0.0.1:8080/x?y=1").is_ok());
        for bad in [
            "ftp://as.example/",
            "/relative",
            "https:///nohost",
            "https://as.example/#f",
            "not a url",
        ] {
            assert!(
                matches!(parse(bad), Err(FetchError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }
}
