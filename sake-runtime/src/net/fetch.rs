//! A small HTTP(S) client for talking to authorization servers: GET a JSON document, POST a
//! form or a JSON document. hyper's pooled client, TLS through rustls (ring, Mozilla's roots,
//! no process-wide provider needed), plain `http` allowed (loopback test servers). Every
//! exchange has a deadline and a body limit, and redirects are not followed (a 3xx is an
//! answer like any other: metadata and key sets are fetched from exactly the configured URLs).

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, USER_AGENT};
#[cfg(feature = "auth")]
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri};
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

/// An answer: its status, headers and (bounded) body.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: StatusCode,
    #[cfg_attr(not(feature = "client"), allow(dead_code))] // The client's only.
    pub(crate) headers: HeaderMap,
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
#[cfg(feature = "auth")]
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

/// The connector of every HTTP(S) client of sake (the fetcher, and the MCP client's transport):
/// TCP without Nagle's delay, TLS through rustls with ring and Mozilla's roots (no process-wide
/// crypto provider needed), plain `http` allowed. Fails only if rustls cannot set up its TLS
/// configuration.
pub(crate) fn https_connector() -> Result<HttpsConnector<HttpConnector>, String> {
    let provider = rustls::crypto::ring::default_provider();
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(provider)
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp))
}

impl Fetcher {
    /// A client with these limits. Fails only if rustls cannot set up its TLS configuration.
    pub(crate) fn new(limits: Limits) -> Result<Self, String> {
        let https = https_connector()?;
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
    #[cfg(feature = "auth")]
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
                let value = basic_auth(id, secret)
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

    /// Sends one request: `headers` as given (a `User-Agent` is added), `body` as is.
    #[cfg_attr(not(feature = "client"), allow(dead_code))] // The client's only.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response, FetchError> {
        let uri = parse(url)?;
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .body(Full::new(body))
            .map_err(|e| invalid(url, e.to_string()))?;
        *request.headers_mut() = headers;
        request
            .headers_mut()
            .entry(USER_AGENT)
            .or_insert(HeaderValue::from_static(UA));
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
            let headers = response.headers().clone();
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
                headers,
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
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
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

/// The `Authorization` value of `client_secret_basic` (RFC 6749 section 2.3.1): `Basic` and the
/// Base64 of `id:secret`, each part form-urlencoded first.
pub(crate) fn basic_auth(
    id: &str,
    secret: &str,
) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
    let mut pair = String::new();
    form_encode(id, &mut pair);
    pair.push(':');
    form_encode(secret, &mut pair);
    let mut value = HeaderValue::from_str(&format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))?;
    value.set_sensitive(true);
    Ok(value)
}

/// `fields` as an `application/x-www-form-urlencoded` body.
#[cfg_attr(not(feature = "client"), allow(dead_code))] // The client's only.
pub(crate) fn form_body(fields: &[(&str, &str)]) -> String {
    let mut body = String::new();
    for (k, v) in fields {
        if !body.is_empty() {
            body.push('&');
        }
        form_encode(k, &mut body);
        body.push('=');
        form_encode(v, &mut body);
    }
    body
}

/// Decodes an `application/x-www-form-urlencoded` string (a query or a form body) into its
/// pairs, in order: `+` is a space, `%XX` a byte; invalid UTF-8 is replaced. A malformed
/// escape is kept as written.
#[cfg_attr(not(feature = "client"), allow(dead_code))] // The client's only.
pub(crate) fn form_decode(s: &str) -> Vec<(String, String)> {
    fn decode(part: &str) -> String {
        let bytes = part.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = |b: u8| char::from(b).to_digit(16);
                    match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                        (Some(h), Some(l)) => {
                            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
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
    fn form_decoding() {
        assert_eq!(
            form_decode("code=a%2Bb+c&state=x%3D&empty=&flag&bad=%zz%4"),
            [
                ("code".to_owned(), "a+b c".to_owned()),
                ("state".to_owned(), "x=".to_owned()),
                ("empty".to_owned(), String::new()),
                ("flag".to_owned(), String::new()),
                ("bad".to_owned(), "%zz%4".to_owned()),
            ]
        );
        let mut s = String::new();
        form_encode("http://127.0.0.1:9/cb?x=é", &mut s);
        assert_eq!(
            form_decode(&format!("u={s}")),
            [("u".to_owned(), "http://127.0.0.1:9/cb?x=é".to_owned())]
        );
        assert_eq!(form_body(&[("a", "1 2"), ("b", "&")]), "a=1+2&b=%26");
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        let v = basic_auth("id:1", "s é").unwrap();
        assert!(v.is_sensitive());
        // base64("id%3A1:s+%C3%A9")
        assert_eq!(v.to_str().unwrap(), "Basic aWQlM0ExOnMrJUMzJUE5");
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
