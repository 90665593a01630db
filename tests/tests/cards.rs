//! Server cards (experimental SEP-2127, `v1`) and the AI Catalog that points to them, and the
//! MCP registry's `server.json` written from the same listing: exact documents, media types,
//! CORS and cache headers, `ETag` revalidation, the URL behind `Server::public_url`, the `Host`
//! check, and agreement with `server/discover`. The card is validated against the extension's
//! published schema (`spec/server-card/schema.json`).

use std::path::Path;

use sake::card::{Listing, Package, Repository};
use sake::prelude::*;
use sake_tests::{Req, Wire};
use serde_json::{Value, json};

/// A tool, so that the server has something to serve.
#[tool]
fn ping_card() -> &'static str {
    "pong"
}

fn server() -> Server {
    Server::from_registry()
        .name("weather")
        .version("1.2.0")
        .title("Weather")
        .description("Forecasts for any city.")
        .website_url("https://example.com/weather")
        .listing(
            Listing::new("com.example")
                .repository(
                    Repository::github("https://github.com/example/weather").subfolder("server"),
                )
                .package(Package::cargo("weather-mcp", "1.2.0")),
        )
}

fn get(path: &str) -> Req {
    Req::post(Vec::new())
        .http_method(http::Method::GET)
        .without("content-type")
        .header("accept", "application/mcp-server-card+json")
        .path(path)
}

const VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

fn card(url: &str) -> Value {
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
        "name": "com.example/weather",
        "version": "1.2.0",
        "description": "Forecasts for any city.",
        "title": "Weather",
        "websiteUrl": "https://example.com/weather",
        "repository": {"url": "https://github.com/example/weather", "source": "github", "subfolder": "server"},
        "remotes": [{"type": "streamable-http", "url": url, "supportedProtocolVersions": VERSIONS}],
    })
}

fn card_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/server-card/schema.json");
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // The file defines the types; the document is a `ServerCard`.
    schema["$ref"] = json!("#/$defs/ServerCard");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

#[tokio::test]
async fn the_catalog_points_to_the_card() {
    let w = Wire::new(server());
    let reply = w.send_plain(get("/.well-known/ai-catalog.json")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("application/ai-catalog+json")
    );
    assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
    assert_eq!(reply.header("cache-control"), Some("public, max-age=3600"));
    let doc: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        doc,
        json!({"specVersion": "1.0", "entries": [{
            "identifier": "urn:air:example.com:mcp:weather",
            "type": "application/mcp-server-card+json",
            "url": "http://localhost/mcp/server-card",
        }]})
    );
}

#[tokio::test]
async fn the_card_is_public_cacheable_and_valid() {
    let w = Wire::new(server());
    let reply = w.send_plain(get("/mcp/server-card")).await;
    assert_eq!(reply.status, 200);
    for (name, value) in [
        ("content-type", "application/mcp-server-card+json"),
        ("access-control-allow-origin", "*"),
        ("access-control-allow-methods", "GET"),
        (
            "access-control-allow-headers",
            "Content-Type, If-None-Match",
        ),
        ("access-control-expose-headers", "ETag"),
        ("cache-control", "public, max-age=3600"),
    ] {
        assert_eq!(reply.header(name), Some(value), "{name}");
    }
    let doc: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(doc, card("http://localhost/mcp"));
    let errors: Vec<String> = card_schema()
        .iter_errors(&doc)
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    // Revalidation: the same ETag is 304 with no body; another is the document again.
    let etag = reply.header("etag").expect("an ETag").to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34,
        "{etag}"
    );
    let again = w
        .send_plain(get("/mcp/server-card").header("if-none-match", &etag))
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let other = w
        .send_plain(get("/mcp/server-card").header("if-none-match", "\"other\""))
        .await;
    assert_eq!(other.status, 200);
    // A browser's preflight.
    let preflight = w
        .send_plain(get("/mcp/server-card").http_method(http::Method::OPTIONS))
        .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
}

/// The card says what `server/discover` says: the name (its last part), version, title,
/// description and revisions.
#[tokio::test]
async fn the_card_agrees_with_discovery() {
    let w = Wire::new(server());
    let doc: Value =
        serde_json::from_slice(&w.send_plain(get("/mcp/server-card")).await.body).unwrap();
    let reply = w.send(Req::modern(1, "server/discover", json!({}))).await;
    let discovered = &reply.json(200)["result"];
    let info = &discovered["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(
        info,
        &json!({"name": "weather", "version": "1.2.0", "title": "Weather",
                "description": "Forecasts for any city.", "websiteUrl": "https://example.com/weather"})
    );
    assert_eq!(
        doc["name"].as_str().unwrap().rsplit('/').next(),
        info["name"].as_str()
    );
    for key in ["version", "title", "description", "websiteUrl"] {
        assert_eq!(doc[key], info[key], "{key}");
    }
    assert_eq!(
        doc["remotes"][0]["supportedProtocolVersions"],
        discovered["supportedVersions"]
    );
}

/// Behind a proxy the documents name the public URL, whatever the request's `Host`; without
/// one, a `Host` the endpoint would refuse is refused here too.
#[tokio::test]
async fn public_url_and_host() {
    let w = Wire::new(server().public_url("https://mcp.example.com/weather/"));
    let doc: Value =
        serde_json::from_slice(&w.send_plain(get("/mcp/server-card")).await.body).unwrap();
    assert_eq!(doc, card("https://mcp.example.com/weather/mcp"));
    let catalog: Value =
        serde_json::from_slice(&w.send_plain(get("/.well-known/ai-catalog.json")).await.body)
            .unwrap();
    assert_eq!(
        catalog["entries"][0]["url"],
        "https://mcp.example.com/weather/mcp/server-card"
    );
    assert_eq!(
        w.service().server_card().unwrap(),
        card("https://mcp.example.com/weather/mcp")
    );

    let w = Wire::new(server());
    let evil = w
        .send_plain(get("/mcp/server-card").header("host", "evil.example"))
        .await;
    assert_eq!(evil.status, 403);
    let named = Wire::new(server().allowed_hosts(["mcp.example.org"]));
    let doc: Value = serde_json::from_slice(
        &named
            .send_plain(get("/mcp/server-card").header("host", "mcp.example.org:8443"))
            .await
            .body,
    )
    .unwrap();
    assert_eq!(doc["remotes"][0]["url"], "http://mcp.example.org:8443/mcp");
}

#[tokio::test]
async fn server_json_comes_from_the_same_listing() {
    let service = server().build().unwrap();
    assert_eq!(
        service.registry_server_json().unwrap(),
        json!({
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
            "name": "com.example/weather",
            "title": "Weather",
            "description": "Forecasts for any city.",
            "repository": {"url": "https://github.com/example/weather", "source": "github", "subfolder": "server"},
            "websiteUrl": "https://example.com/weather",
            "version": "1.2.0",
            "packages": [{"registryType": "cargo", "registryBaseUrl": "https://crates.io",
                          "identifier": "weather-mcp", "version": "1.2.0", "transport": {"type": "stdio"}}],
        })
    );
    // Without a public URL the card has no remote (what a command prints before deploying).
    let mut offline = card("");
    offline.as_object_mut().unwrap().remove("remotes");
    assert_eq!(service.server_card().unwrap(), offline);
    // With one, server.json lists the remote too.
    let deployed = server()
        .public_url("https://mcp.example.com")
        .build()
        .unwrap();
    assert_eq!(
        deployed.registry_server_json().unwrap()["remotes"],
        json!([{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}])
    );
}

#[tokio::test]
async fn no_listing_no_card_and_bad_listings_stop_start_up() {
    let w = Wire::new(Server::from_registry().name("plain").version("1.0.0"));
    assert_eq!(w.send_plain(get("/mcp/server-card")).await.status, 404);
    assert_eq!(
        w.send_plain(get("/.well-known/ai-catalog.json"))
            .await
            .status,
        404
    );
    assert_eq!(w.service().server_card(), None);

    let err = |s: Server| s.build().unwrap_err().to_string();
    assert_eq!(
        err(Server::from_registry()
            .name("x1")
            .version("1.0.0")
            .listing(Listing::new("com.example"))),
        "invalid configuration: server card: the card needs a description of the server: set Server::description (1 to 100 characters)"
    );
    assert_eq!(
        err(server().version("^1.2")),
        "invalid configuration: server card: the version \"^1.2\" must be one version (1.0.2), not a range; set Server::version"
    );
    assert_eq!(
        err(server().public_url("mcp.example.com")),
        "invalid configuration: Server::public_url \"mcp.example.com\" must be an http:// or https:// URL"
    );
}
