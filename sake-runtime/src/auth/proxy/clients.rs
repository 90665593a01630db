//! The MCP clients the proxy knows: registered dynamically (RFC 7591; the registration is the
//! signed client id itself, so nothing is stored and every replica sharing the secret knows
//! it), named by a Client ID Metadata Document URL (fetched with SSRF protections, cached), or
//! configured ahead of time.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, CACHE_CONTROL, USER_AGENT};
use http::{HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{B64, clip};

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Method {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "client_secret_basic")]
    Basic,
    #[serde(rename = "client_secret_post")]
    Post,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::None => "none",
            Method::Basic => "client_secret_basic",
            Method::Post => "client_secret_post",
        }
    }
}

/// Where a client's description came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Registered,
    MetadataDocument,
    Configured,
}

/// A client the proxy knows.
#[derive(Debug, Clone)]
pub(crate) struct KnownClient {
    pub(crate) id: String,
    pub(crate) name: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
    pub(crate) method: Method,
    pub(crate) grant_types: Vec<String>,
    pub(crate) kind: Kind,
    /// A configured client's secret (registered ones derive theirs from the id).
    pub(crate) secret: Option<String>,
}

/// What a registration id carries (compact member names: it travels in URLs).
#[derive(Serialize, Deserialize)]
struct Packed {
    r: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<String>,
    m: Method,
    g: Vec<String>,
    t: u64,
}

/// The prefix of registered client ids.
const PREFIX: &str = "sake_";
/// The longest client id a registration may produce.
const MAX_CLIENT_ID: usize = 2048;
pub(crate) const MAX_REDIRECT_URIS: usize = 8;
const MAX_URI: usize = 1024;
const MAX_NAME: usize = 128;

/// Why a registration was refused (`invalid_redirect_uri` or `invalid_client_metadata`).
#[derive(Debug)]
pub(crate) struct RegistrationError {
    pub(crate) code: &'static str,
    pub(crate) description: String,
}

fn bad_metadata(description: impl Into<String>) -> RegistrationError {
    RegistrationError {
        code: "invalid_client_metadata",
        description: description.into(),
    }
}

fn bad_redirect(description: impl Into<String>) -> RegistrationError {
    RegistrationError {
        code: "invalid_redirect_uri",
        description: description.into(),
    }
}

/// Checks a redirect URI a client registers: absolute, no fragment; `https`, `http` on a
/// loopback host (native apps, RFC 8252 section 7.3), or a private-use scheme with a dot
/// (RFC 8252 section 7.1).
pub(crate) fn check_redirect_uri(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_URI {
        return Err(format!("a redirect URI is longer than {MAX_URI} bytes"));
    }
    if uri.contains('#') {
        return Err(format!("the redirect URI {uri:?} has a fragment"));
    }
    if uri.chars().any(|c| c.is_control() || c == ' ') {
        return Err("a redirect URI holds spaces or control characters".into());
    }
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Err(format!("the redirect URI {uri:?} is not absolute"));
    };
    let scheme = scheme.to_ascii_lowercase();
    match scheme.as_str() {
        "https" => {
            let parsed: Uri = uri
                .parse()
                .map_err(|_| format!("the redirect URI {uri:?} is not a URL"))?;
            if parsed.host().is_none_or(str::is_empty) {
                return Err(format!("the redirect URI {uri:?} names no host"));
            }
            Ok(())
        }
        "http" => {
            let parsed: Uri = uri
                .parse()
                .map_err(|_| format!("the redirect URI {uri:?} is not a URL"))?;
            if matches!(parsed.host(), Some("127.0.0.1" | "localhost" | "[::1]")) {
                Ok(())
            } else {
                Err(format!(
                    "the redirect URI {uri:?} is plain http to another machine: use https, or http on a loopback address"
                ))
            }
        }
        "javascript" | "data" | "file" | "vbscript" | "blob" | "about" => {
            Err(format!("the redirect URI scheme {scheme:?} is not allowed"))
        }
        s if s.contains('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.is_empty() =>
        {
            Ok(())
        }
        _ => Err(format!(
            "the redirect URI {uri:?} must be https, http on a loopback address, or a private-use scheme in reverse domain form (com.example.app:/callback)"
        )),
    }
}

/// The registration request (RFC 7591 section 2), as far as it is read.
#[derive(Deserialize)]
pub(crate) struct RegistrationRequest {
    #[serde(default)]
    redirect_uris: Option<Vec<Value>>,
    #[serde(default)]
    client_name: Option<Value>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    response_types: Option<Vec<String>>,
    #[serde(default)]
    scope: Option<String>,
}

impl super::Inner {
    fn mac(&self, label: &str, text: &str) -> Vec<u8> {
        super::hmac(&self.secret, label, text.as_bytes())
    }

    /// Registers a client (RFC 7591): the answer's JSON, or why not.
    pub(crate) fn register(&self, req: RegistrationRequest) -> Result<Value, RegistrationError> {
        let grant_types = req
            .grant_types
            .unwrap_or_else(|| vec!["authorization_code".into()]);
        for g in &grant_types {
            if !self.grant_types().contains(&g.as_str()) {
                return Err(bad_metadata(format!(
                    "the grant type {:?} is not supported (supported: {})",
                    clip(g),
                    self.grant_types().join(", ")
                )));
            }
        }
        if let Some(rt) = &req.response_types
            && rt.iter().any(|r| r != "code")
        {
            return Err(bad_metadata("only the response type code is supported"));
        }
        let method = match req.token_endpoint_auth_method.as_deref() {
            None | Some("client_secret_basic") => Method::Basic,
            Some("none") => Method::None,
            Some("client_secret_post") => Method::Post,
            Some(other) => {
                return Err(bad_metadata(format!(
                    "the token endpoint auth method {:?} is not supported (none, client_secret_basic, client_secret_post)",
                    clip(other)
                )));
            }
        };
        let mut redirect_uris = Vec::new();
        for v in req.redirect_uris.unwrap_or_default() {
            let Some(uri) = v.as_str() else {
                return Err(bad_redirect("redirect_uris holds a non-string"));
            };
            check_redirect_uri(uri).map_err(bad_redirect)?;
            if !redirect_uris.iter().any(|u| u == uri) {
                redirect_uris.push(uri.to_owned());
            }
        }
        if grant_types.iter().any(|g| g == "authorization_code") && redirect_uris.is_empty() {
            return Err(bad_redirect(
                "a client of the authorization code grant registers at least one redirect URI",
            ));
        }
        if redirect_uris.len() > MAX_REDIRECT_URIS {
            return Err(bad_redirect(format!(
                "at most {MAX_REDIRECT_URIS} redirect URIs"
            )));
        }
        let name = match req.client_name {
            None | Some(Value::Null) => None,
            Some(Value::String(n)) if n.chars().count() <= MAX_NAME => {
                Some(n.chars().filter(|c| !c.is_control()).collect::<String>())
            }
            Some(Value::String(_)) => {
                return Err(bad_metadata(format!(
                    "client_name is longer than {MAX_NAME} characters"
                )));
            }
            Some(_) => return Err(bad_metadata("client_name is not a string")),
        };
        let issued = super::now();
        let packed = Packed {
            r: redirect_uris.clone(),
            n: name.clone(),
            m: method,
            g: grant_types.clone(),
            t: issued,
        };
        let body =
            B64.encode(serde_json::to_vec(&packed).map_err(|e| bad_metadata(e.to_string()))?);
        let tag = self.mac("client-id", &body);
        let id = format!("{PREFIX}{body}.{}", B64.encode(&tag[..16]));
        if id.len() > MAX_CLIENT_ID {
            return Err(bad_metadata(
                "the registration is too large (fewer or shorter redirect URIs, a shorter name)",
            ));
        }
        let mut answer = json!({
            "client_id": id,
            "client_id_issued_at": issued,
            "redirect_uris": redirect_uris,
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method.as_str(),
        });
        if let Some(n) = name {
            answer["client_name"] = json!(n);
        }
        if let Some(s) = req.scope {
            answer["scope"] = json!(clip(&s));
        }
        if method != Method::None {
            answer["client_secret"] = json!(self.client_secret(&id));
            answer["client_secret_expires_at"] = json!(0);
        }
        Ok(answer)
    }

    /// The secret of a registered confidential client.
    pub(crate) fn client_secret(&self, id: &str) -> String {
        B64.encode(self.mac("client-secret", id))
    }

    /// The client a registered id names, if this proxy (or one sharing its secret) issued it.
    pub(crate) fn registered(&self, id: &str) -> Option<KnownClient> {
        let rest = id.strip_prefix(PREFIX)?;
        let (body, tag) = rest.rsplit_once('.')?;
        let expected = self.mac("client-id", body);
        let given = B64.decode(tag).ok()?;
        if given.len() != 16 || !super::constant_eq(&given, &expected[..16]) {
            return None;
        }
        let packed: Packed = serde_json::from_slice(&B64.decode(body).ok()?).ok()?;
        Some(KnownClient {
            id: id.to_owned(),
            name: packed.n,
            redirect_uris: packed.r,
            method: packed.m,
            grant_types: packed.g,
            kind: Kind::Registered,
            secret: None,
        })
    }
}

/// Whether an address is one a metadata document may be fetched from: public unicast only.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach IPv4 addresses.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                let o = v6.octets();
                return is_public_v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            }
            if s[0] == 0x2002 {
                return is_public_v4(Ipv4Addr::new(
                    (s[1] >> 8) as u8,
                    s[1] as u8,
                    (s[2] >> 8) as u8,
                    s[2] as u8,
                ));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x2001 && s[1] == 0) // Teredo
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64 (RFC 8215)
                || (s[0..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0) // IPv4-translated (::ffff:0:0:0/96)
                || s[0..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible, deprecated
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (64..128).contains(&o[1])) // shared address space (CGNAT)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] == 18 || o[1] == 19)) // benchmarking
        || o[0] >= 240) // reserved
}

/// A resolver that answers only with public addresses: a name that resolves to any private,
/// loopback or otherwise internal address is refused whole (the connection is made to the
/// addresses checked here, so a second lookup cannot swap them).
#[derive(Clone, Debug, Default)]
pub(crate) struct PublicResolver;

impl tower::Service<Name> for PublicResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(std::io::Error::other("the name has no address"));
            }
            if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                return Err(std::io::Error::other(format!(
                    "{} resolves to the non-public address {}",
                    name.as_str(),
                    bad.ip()
                )));
            }
            Ok(addrs.into_iter())
        })
    }
}

/// The client of metadata documents: public addresses only (unless loopback http is allowed
/// for tests), no redirects, a deadline and a size limit.
pub(crate) struct MetadataFetcher {
    public: Client<HttpsConnector<HttpConnector<PublicResolver>>, Full<Bytes>>,
    loopback: Client<HttpConnector, Full<Bytes>>,
    allow_loopback_http: bool,
    timeout: Duration,
    max_bytes: usize,
    cache: Mutex<HashMap<String, (KnownClient, Instant)>>,
    max_cached: usize,
    /// URLs whose document could not be fetched lately, with when they may be tried again:
    /// asked again meanwhile, they are refused without a fetch.
    failed: Mutex<HashMap<String, Instant>>,
    /// Fetches under way (a stranger names the URLs: each costs a DNS lookup and a
    /// connection, which may outlive its deadline).
    fetching: tokio::sync::Semaphore,
}

/// How long a URL whose document could not be fetched is refused without a fetch.
const FAILED_TTL: Duration = Duration::from_secs(60);
/// At most this many metadata documents are fetched at once.
const MAX_FETCHING: usize = 16;
/// What a stranger is told when as many documents are being fetched as allowed.
pub(crate) const TOO_MANY_FETCHES: &str =
    "too many client metadata documents are being fetched right now; try again shortly";

impl std::fmt::Debug for MetadataFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataFetcher")
            .field("allow_loopback_http", &self.allow_loopback_http)
            .finish_non_exhaustive()
    }
}

/// The default and longest time a metadata document is kept.
const DEFAULT_TTL: Duration = Duration::from_secs(300);
const MAX_TTL: Duration = Duration::from_secs(86_400);

impl MetadataFetcher {
    pub(crate) fn new(allow_loopback_http: bool) -> Result<Self, String> {
        let provider = rustls::crypto::ring::default_provider();
        let mut tcp = HttpConnector::new_with_resolver(PublicResolver);
        tcp.set_nodelay(true);
        tcp.enforce_http(false);
        tcp.set_connect_timeout(Some(Duration::from_secs(3)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| format!("cannot set up TLS: {e}"))?
            .https_only()
            .enable_http1()
            .wrap_connector(tcp);
        Ok(MetadataFetcher {
            public: Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(2)
                .build(https),
            loopback: Client::builder(TokioExecutor::new()).build_http(),
            allow_loopback_http,
            timeout: Duration::from_secs(5),
            max_bytes: 5 * 1024,
            cache: Mutex::new(HashMap::new()),
            max_cached: 1000,
            failed: Mutex::new(HashMap::new()),
            fetching: tokio::sync::Semaphore::new(MAX_FETCHING),
        })
    }

    /// Whether `id` is a URL client id (a metadata document's).
    pub(crate) fn is_url(id: &str) -> bool {
        id.starts_with("https://") || id.starts_with("http://")
    }

    /// Checks a URL client id as the CIMD draft says: https with a host and a path, no
    /// fragment, credentials or dot segments; or, when allowed, http on a loopback address.
    fn check_url(&self, url: &str) -> Result<Uri, String> {
        let uri: Uri = url
            .parse()
            .map_err(|_| format!("the client id {:?} is not a URL", clip(url)))?;
        if url.contains('#') || uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err("a client id URL has no fragment and no credentials".into());
        }
        if uri.path().len() <= 1 {
            return Err("a client id URL has a path (https://app.example/client.json)".into());
        }
        if uri.path().split('/').any(|s| s == "." || s == "..") {
            return Err("a client id URL has no dot segments".into());
        }
        let host = uri.host().unwrap_or_default();
        let loopback_host = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
        match uri.scheme_str() {
            Some("https") => {
                let literal = host.trim_start_matches('[').trim_end_matches(']');
                if let Ok(ip) = literal.parse::<IpAddr>()
                    && !is_public(ip)
                {
                    return Err(format!(
                        "the client id URL points at the non-public address {ip}"
                    ));
                }
                // RFC 6761 section 6.3: every name under `localhost` is the loopback.
                let name = host.trim_end_matches('.').to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    return Err("the client id URL points at localhost".into());
                }
                Ok(uri)
            }
            Some("http") if self.allow_loopback_http && loopback_host => Ok(uri),
            Some("http") => Err(
                "a client id URL must be https (plain http is accepted only for loopback addresses, and only when the server allows it for tests)".into(),
            ),
            _ => Err("a client id URL must be https".into()),
        }
    }

    /// The client a metadata document URL names: from the cache, or fetched and checked.
    pub(crate) async fn client(&self, url: &str) -> Result<KnownClient, String> {
        if let Ok(cache) = self.cache.lock()
            && let Some((c, until)) = cache.get(url)
            && *until > Instant::now()
        {
            return Ok(c.clone());
        }
        let uri = self.check_url(url)?;
        let now = Instant::now();
        if let Ok(failed) = self.failed.lock()
            && failed.get(url).is_some_and(|until| *until > now)
        {
            return Err(NOT_FETCHED.to_owned());
        }
        let Ok(_fetching) = self.fetching.try_acquire() else {
            return Err(TOO_MANY_FETCHES.to_owned());
        };
        let (client, ttl) = self.fetch(url, uri).await.map_err(|e| match e {
            Fetch::Network(reason) => {
                // What the network said (addresses, ports) stays in the log.
                tracing::info!(url = %clip(url), %reason, "a client metadata document could not be fetched");
                if let Ok(mut failed) = self.failed.lock() {
                    let now = Instant::now();
                    if failed.len() >= self.max_cached {
                        failed.retain(|_, until| *until > now);
                    }
                    if failed.len() < self.max_cached {
                        failed.insert(url.to_owned(), now + FAILED_TTL);
                    }
                }
                NOT_FETCHED.to_owned()
            }
            Fetch::Document(reason) => reason,
        })?;
        if let Ok(mut cache) = self.cache.lock() {
            let now = Instant::now();
            if cache.len() >= self.max_cached {
                cache.retain(|_, (_, until)| *until > now);
            }
            if cache.len() < self.max_cached {
                cache.insert(url.to_owned(), (client.clone(), now + ttl));
            }
        }
        Ok(client)
    }

    async fn fetch(&self, url: &str, uri: Uri) -> Result<(KnownClient, Duration), Fetch> {
        let request = Request::get(uri)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(
                USER_AGENT,
                HeaderValue::from_static(concat!("sake/", env!("CARGO_PKG_VERSION"))),
            )
            .body(Full::new(Bytes::new()))
            .map_err(|e| Fetch::Network(e.to_string()))?;
        let max = self.max_bytes;
        let https = url.starts_with("https://");
        let work = async {
            let response = if https {
                self.public.request(request).await
            } else {
                self.loopback.request(request).await
            }
            .map_err(|e| {
                format!(
                    "the client metadata document could not be fetched: {}",
                    crate::net::fetch::describe(&e)
                )
            })?;
            let status = response.status();
            let ttl = cache_ttl(response.headers().get(CACHE_CONTROL));
            let mut body = response.into_body();
            let mut out = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| e.to_string())?;
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > max {
                        return Err(format!(
                            "the client metadata document is larger than {max} bytes"
                        ));
                    }
                    out.extend_from_slice(&data);
                }
            }
            Ok::<_, String>((status, ttl, out))
        };
        let (status, ttl, body) = tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| {
                Fetch::Network(format!(
                    "the client metadata document did not arrive within {:?}",
                    self.timeout
                ))
            })?
            .map_err(Fetch::Network)?;
        if status != StatusCode::OK {
            return Err(Fetch::Network(format!(
                "the client metadata document URL answered {} (redirects are not followed)",
                status.as_u16()
            )));
        }
        let doc: Map<String, Value> = serde_json::from_slice(&body).map_err(|_| {
            Fetch::Document("the client metadata document is not a JSON object".to_owned())
        })?;
        Ok((parse_document(url, &doc).map_err(Fetch::Document)?, ttl))
    }
}

/// Why a metadata document could not be read.
enum Fetch {
    /// The network's answer (an address, a refused port, a status): logged, never shown.
    Network(String),
    /// What the document says: the client's developer may see it.
    Document(String),
}

/// What a stranger is told when a metadata document could not be fetched (the reason is
/// logged).
pub(crate) const NOT_FETCHED: &str = "the client metadata document could not be fetched: it must be served over https from a public address, with status 200 and no redirect, within 5 seconds and 5120 bytes";

/// The time a document may be kept: its `max-age`, within bounds; `no-store` keeps it briefly.
fn cache_ttl(header: Option<&HeaderValue>) -> Duration {
    let Some(v) = header.and_then(|v| v.to_str().ok()) else {
        return DEFAULT_TTL;
    };
    let mut ttl = DEFAULT_TTL;
    for d in v.split(',').map(str::trim) {
        if d.eq_ignore_ascii_case("no-store") || d.eq_ignore_ascii_case("no-cache") {
            return Duration::from_secs(10);
        }
        if let Some(age) = d
            .strip_prefix("max-age=")
            .and_then(|a| a.parse::<u64>().ok())
        {
            ttl = Duration::from_secs(age);
        }
    }
    ttl.clamp(Duration::from_secs(10), MAX_TTL)
}

/// Checks a metadata document as the CIMD draft says and reads the client from it.
pub(crate) fn parse_document(url: &str, doc: &Map<String, Value>) -> Result<KnownClient, String> {
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err("the client metadata document's client_id is not its URL".into());
    }
    if doc.contains_key("client_secret") || doc.contains_key("client_secret_expires_at") {
        return Err("a client metadata document holds no client secret".into());
    }
    match doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(other) => {
            return Err(format!(
                "the client metadata document's token_endpoint_auth_method {:?} is not supported here (none)",
                clip(other)
            ));
        }
    }
    let uris = doc
        .get("redirect_uris")
        .and_then(Value::as_array)
        .ok_or("the client metadata document has no redirect_uris")?;
    let mut redirect_uris = Vec::new();
    for u in uris.iter().take(MAX_REDIRECT_URIS) {
        let u = u.as_str().ok_or("redirect_uris holds a non-string")?;
        check_redirect_uri(u)?;
        redirect_uris.push(u.to_owned());
    }
    if redirect_uris.is_empty() {
        return Err("the client metadata document has no redirect_uris".into());
    }
    let name = doc.get("client_name").and_then(Value::as_str).map(|n| {
        n.chars()
            .filter(|c| !c.is_control())
            .take(MAX_NAME)
            .collect()
    });
    let grant_types = doc
        .get("grant_types")
        .and_then(Value::as_array)
        .map(|g| {
            g.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| vec!["authorization_code".to_owned()]);
    Ok(KnownClient {
        id: url.to_owned(),
        name,
        redirect_uris,
        method: Method::None,
        grant_types,
        kind: Kind::MetadataDocument,
        secret: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2002:a00:1::",
            "192.0.0.8",
            "198.18.0.1",
            "240.0.0.1",
            "64:ff9b:1::808:808",
            "::ffff:0:808:808",
        ] {
            assert!(!is_public(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn redirect_uris() {
        for ok in [
            "https://app.example/cb",
            "http://127.0.0.1:4000/callback",
            "http://localhost/cb",
            "com.example.app:/oauth",
        ] {
            assert!(check_redirect_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "javascript:alert(1)",
            "https://app.example/cb#x",
            "/relative",
            "myapp:/cb",
            "data:text/html,x",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metadata_urls_and_documents() {
        let f = MetadataFetcher::new(false).unwrap();
        assert!(f.check_url("https://app.example/client.json").is_ok());
        for (bad, reason) in [
            (
                "https://app.example/",
                "a client id URL has a path (https://app.example/client.json)",
            ),
            (
                "https://10.0.0.1/c.json",
                "the client id URL points at the non-public address 10.0.0.1",
            ),
            (
                "https://[::1]/c.json",
                "the client id URL points at the non-public address ::1",
            ),
            (
                "https://localhost/c.json",
                "the client id URL points at localhost",
            ),
            (
                "https://x.LocalHost./c.json",
                "the client id URL points at localhost",
            ),
            (
                "http://127.0.0.1:9/c.json",
                "a client id URL must be https (plain http is accepted only for loopback addresses, and only when the server allows it for tests)",
            ),
            (
                "https://u:p@app.example/c.json",
                "a client id URL has no fragment and no credentials",
            ),
            (
                "https://app.example/a/../c.json",
                "a client id URL has no dot segments",
            ),
        ] {
            assert_eq!(f.check_url(bad).unwrap_err(), reason, "{bad}");
        }
        let loopback = MetadataFetcher::new(true).unwrap();
        assert!(loopback.check_url("http://127.0.0.1:9/c.json").is_ok());
        assert!(loopback.check_url("http://10.0.0.1/c.json").is_err());
        let url = "https://app.example/c.json";
        let doc = |v: Value| v.as_object().unwrap().clone();
        let c = parse_document(
            url,
            &doc(json!({"client_id": url, "client_name": "App", "redirect_uris": ["http://127.0.0.1:3/cb"]})),
        )
        .unwrap();
        assert_eq!(c.name.as_deref(), Some("App"));
        assert!(
            parse_document(
                url,
                &doc(
                    json!({"client_id": "https://other/c.json", "redirect_uris": ["https://a/cb"]})
                )
            )
            .is_err()
        );
        assert!(parse_document(url, &doc(json!({"client_id": url, "redirect_uris": ["https://a/cb"], "token_endpoint_auth_method": "client_secret_basic"}))).is_err());
        assert!(parse_document(url, &doc(json!({"client_id": url}))).is_err());
    }

    #[tokio::test]
    async fn fetches_are_capped_and_failures_remembered() {
        let f = MetadataFetcher::new(true).unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/client.json", closed.local_addr().unwrap());
        drop(closed);
        assert_eq!(f.client(&url).await.unwrap_err(), NOT_FETCHED);
        // Remembered: refused again without a fetch (the fetch slots are all taken here, so a
        // fetch would be refused with another text).
        let _all = f.fetching.try_acquire_many(MAX_FETCHING as u32).unwrap();
        assert_eq!(f.client(&url).await.unwrap_err(), NOT_FETCHED);
        let other = url.replace("client.json", "other.json");
        assert_eq!(f.client(&other).await.unwrap_err(), TOO_MANY_FETCHES);
    }

    #[tokio::test]
    async fn a_name_resolving_to_a_private_address_is_refused_by_the_resolver() {
        use tower::Service as _;
        let err = PublicResolver
            .call("localhost".parse().unwrap())
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text == "localhost resolves to the non-public address 127.0.0.1"
                || text == "localhost resolves to the non-public address ::1",
            "{text}"
        );
    }
}
