//! The server card and the AI Catalog over HTTP (`Server::listing`): `GET <path>/server-card`
//! (`application/mcp-server-card+json`) and `GET /.well-known/ai-catalog.json`
//! (`application/ai-catalog+json`), readable from any origin, cacheable, with an `ETag`
//! honoured by `If-None-Match`.
//!
//! Their URLs are the [`Server::public_url`](crate::Server::public_url) when set; otherwise
//! those the request came to (`http://` and its `Host`, checked as the endpoint checks it).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::StatusCode;
use http::header::{
    CACHE_CONTROL, CONTENT_TYPE, ETAG, HOST, HeaderMap, HeaderValue, IF_NONE_MATCH,
};
use sha2::{Digest, Sha256};

use super::Endpoint;
use super::admission;
use crate::card::{AI_CATALOG_MEDIA_TYPE, AI_CATALOG_PATH, SERVER_CARD_MEDIA_TYPE};
use crate::protocol::headers::{CorsHeaders, Line, RequestHeaders};

/// The routes, when the server has a listing.
pub(crate) fn routes(ep: &Arc<Endpoint>) -> Option<Router<Arc<Endpoint>>> {
    ep.http.listing.as_ref()?;
    let card_path = format!("{}/server-card", ep.http.path.trim_end_matches('/'));
    Some(
        Router::new()
            .route(
                &card_path,
                axum::routing::get(card).options(preflight).head(card),
            )
            .route(
                AI_CATALOG_PATH,
                axum::routing::get(catalog).options(preflight).head(catalog),
            ),
    )
}

/// The endpoint's URL as clients outside see it: the public URL, or the request's.
fn mcp_url(ep: &Endpoint, headers: &HeaderMap) -> Result<String, (StatusCode, String)> {
    let path = &ep.http.path;
    if let Some(base) = &ep.http.public_url {
        return Ok(format!("{base}{path}"));
    }
    // The Host names the URL: only one the endpoint would serve.
    let host_only = RequestHeaders {
        origin: Line::default(),
        ..RequestHeaders::new(headers)
    };
    if let Err(e) = admission::check_origin(&ep.http.hosts, &[], &host_only) {
        return Err((StatusCode::FORBIDDEN, e.message));
    }
    match headers.get(HOST).and_then(|h| h.to_str().ok()) {
        Some(host) if !host.is_empty() => Ok(format!("http://{host}{path}")),
        _ => Err((
            StatusCode::BAD_REQUEST,
            "Bad Request: no Host header; set Server::public_url to serve the card without one"
                .to_owned(),
        )),
    }
}

fn plain(status: StatusCode, message: &str) -> Response {
    let mut resp = Response::new(Body::from(message.to_owned()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    cors(resp.headers_mut());
    resp
}

/// Any page may read a card (and its errors): `GET`, revalidated with `If-None-Match`.
fn cors(h: &mut HeaderMap) {
    CorsHeaders {
        methods: Some("GET"),
        allow_headers: Some("Content-Type, If-None-Match"),
        expose: Some("ETag"),
        max_age: None,
    }
    .allow_any_origin(h);
}

/// A JSON document with its media type, cache headers and `ETag`; 304 when the request's
/// `If-None-Match` names it.
fn document(
    request_headers: &HeaderMap,
    media_type: &'static str,
    doc: &serde_json::Value,
) -> Response {
    let body = serde_json::to_vec(doc).unwrap_or_default();
    let hash = Sha256::digest(&body);
    let etag = format!(
        "\"{}\"",
        hash.iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let matches = request_headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == etag
        });
    let mut resp = if matches {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(Body::from(body))
    };
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(media_type));
    h.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(ETAG, v);
    }
    cors(h);
    resp
}

async fn card(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    let Some((listing, info)) = &ep.http.listing else {
        return plain(StatusCode::NOT_FOUND, "Not Found");
    };
    match mcp_url(&ep, request.headers()) {
        Ok(url) => document(
            request.headers(),
            SERVER_CARD_MEDIA_TYPE,
            &listing.server_card(info, Some(&url)),
        ),
        Err((status, message)) => plain(status, &message),
    }
}

async fn catalog(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    let Some((listing, info)) = &ep.http.listing else {
        return plain(StatusCode::NOT_FOUND, "Not Found");
    };
    match mcp_url(&ep, request.headers()) {
        Ok(url) => document(
            request.headers(),
            AI_CATALOG_MEDIA_TYPE,
            &listing.catalog(info, &format!("{url}/server-card")),
        ),
        Err((status, message)) => plain(status, &message),
    }
}

async fn preflight() -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    cors(resp.headers_mut());
    resp
}
