//! Server cards and registry listings: what a server says about itself before any client
//! connects, generated from what it already knows (its `serverInfo`, revisions and URL).
//!
//! - The **server card** (experimental SEP-2127, format `v1`): served at
//!   `<mcp-url>/server-card` as `application/mcp-server-card+json`, and pointed to by an AI
//!   Catalog at `/.well-known/ai-catalog.json` (`application/ai-catalog+json`).
//! - The MCP registry's **`server.json`** (schema 2025-12-11): the document `mcp-publisher`
//!   publishes, with the packages that install the server.
//!
//! Both come from one [`Listing`] given to [`Server::listing`](crate::Server::listing) and the
//! server's name, version, title, description and website; read them with
//! [`Service::server_card`](crate::Service::server_card) and
//! [`Service::registry_server_json`](crate::Service::registry_server_json). See
//! docs/clients.md, "Server cards".

use serde_json::{Map, Value, json};

use crate::protocol::Revision;
use crate::protocol::types::Implementation;

/// The `$schema` of a `v1` server card.
pub const SERVER_CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// The `$schema` of the MCP registry's `server.json` sake writes.
pub const SERVER_JSON_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// The media type of a server card.
pub const SERVER_CARD_MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The media type of an AI Catalog.
pub const AI_CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";
/// Where the AI Catalog is served.
pub const AI_CATALOG_PATH: &str = "/.well-known/ai-catalog.json";

/// Where a server's source lives (`repository` of the card and of `server.json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    url: String,
    source: String,
    subfolder: Option<String>,
    id: Option<String>,
}

impl Repository {
    /// A repository at `url` on a forge (`source`: `"github"`, `"gitlab"`, …).
    pub fn new(url: impl Into<String>, source: impl Into<String>) -> Self {
        Repository {
            url: url.into(),
            source: source.into(),
            subfolder: None,
            id: None,
        }
    }

    /// A GitHub repository (`https://github.com/owner/name`).
    pub fn github(url: impl Into<String>) -> Self {
        Repository::new(url, "github")
    }

    /// The server's directory in the repository (a monorepo).
    pub fn subfolder(mut self, path: impl Into<String>) -> Self {
        self.subfolder = Some(path.into());
        self
    }

    /// The forge's stable id of the repository.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("url".into(), json!(self.url));
        o.insert("source".into(), json!(self.source));
        if let Some(s) = &self.subfolder {
            o.insert("subfolder".into(), json!(s));
        }
        if let Some(i) = &self.id {
            o.insert("id".into(), json!(i));
        }
        Value::Object(o)
    }
}

/// A package that installs the server, for `server.json` (a card describes remote access
/// only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    registry_type: String,
    registry_base_url: Option<String>,
    identifier: String,
    version: String,
}

impl Package {
    /// A package of a registry (`registryType`: `"npm"`, `"pypi"`, `"oci"`, `"cargo"`, …),
    /// run as a stdio command.
    pub fn new(
        registry_type: impl Into<String>,
        identifier: impl Into<String>,
        version: impl Into<String>,
    ) -> Self {
        Package {
            registry_type: registry_type.into(),
            registry_base_url: None,
            identifier: identifier.into(),
            version: version.into(),
        }
    }

    /// A crate on crates.io, installed with `cargo install` and run as a stdio command.
    pub fn cargo(identifier: impl Into<String>, version: impl Into<String>) -> Self {
        Package::new("cargo", identifier, version).registry_base_url("https://crates.io")
    }

    /// The registry's base URL.
    pub fn registry_base_url(mut self, url: impl Into<String>) -> Self {
        self.registry_base_url = Some(url.into());
        self
    }

    fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("registryType".into(), json!(self.registry_type));
        if let Some(u) = &self.registry_base_url {
            o.insert("registryBaseUrl".into(), json!(u));
        }
        o.insert("identifier".into(), json!(self.identifier));
        o.insert("version".into(), json!(self.version));
        o.insert("transport".into(), json!({"type": "stdio"}));
        Value::Object(o)
    }
}

/// How the server is listed: its namespace in the MCP registry (the card's and `server.json`'s
/// `name` is `<namespace>/<server name>`), its repository, and the packages that install it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    namespace: String,
    repository: Option<Repository>,
    packages: Vec<Package>,
}

impl Listing {
    /// A listing under a registry namespace in reverse-DNS form (`io.github.owner`,
    /// `com.example`).
    pub fn new(namespace: impl Into<String>) -> Self {
        Listing {
            namespace: namespace.into(),
            repository: None,
            packages: Vec::new(),
        }
    }

    /// The server's source repository.
    pub fn repository(mut self, repository: Repository) -> Self {
        self.repository = Some(repository);
        self
    }

    /// A package that installs the server (`server.json` only).
    pub fn package(mut self, package: Package) -> Self {
        self.packages.push(package);
        self
    }

    /// The name both documents carry: `<namespace>/<server name>`.
    pub fn name(&self, info: &Implementation) -> String {
        format!("{}/{}", self.namespace, info.name)
    }

    /// The AI Catalog identifier: `urn:air:<publisher>:mcp:<server name>`, the publisher being
    /// the namespace's domain (`io.github.owner` → `owner.github.io`).
    pub fn identifier(&self, info: &Implementation) -> String {
        let domain: Vec<&str> = self.namespace.split('.').rev().collect();
        format!("urn:air:{}:mcp:{}", domain.join("."), info.name)
    }

    /// Checks what the card's format requires of the server: a name the registry accepts, a
    /// description of 1 to 100 characters, a version that is not a range, a title of at most
    /// 100 characters.
    pub(crate) fn check(&self, info: &Implementation) -> Result<(), String> {
        let name = self.name(info);
        let ns_ok = !self.namespace.is_empty()
            && self
                .namespace
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
        if !ns_ok {
            return Err(format!(
                "Listing namespace {:?}: use reverse-DNS letters, digits, `.` and `-` (io.github.owner)",
                self.namespace
            ));
        }
        if info.name.is_empty()
            || !info
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(format!(
                "server card: the server's name {:?} must be letters, digits, `.`, `_` and `-` to be listed as {name:?}; set Server::name",
                info.name
            ));
        }
        if !(3..=200).contains(&name.len()) {
            return Err(format!(
                "server card: the name {name:?} must have 3 to 200 characters"
            ));
        }
        match info.description.as_deref().map(|d| d.chars().count()) {
            None | Some(0) => {
                return Err(
                    "server card: the card needs a description of the server: set Server::description (1 to 100 characters)"
                        .into(),
                );
            }
            Some(n) if n > 100 => {
                return Err(format!(
                    "server card: the description has {n} characters; a card's has at most 100 (Server::description)"
                ));
            }
            Some(_) => {}
        }
        if let Some(n) = info.title.as_deref().map(|t| t.chars().count())
            && !(1..=100).contains(&n)
        {
            return Err(format!(
                "server card: the title has {n} characters; a card's has 1 to 100 (Server::title)"
            ));
        }
        let v = &info.version;
        if v.is_empty()
            || v.len() > 255
            || v.starts_with(['^', '~', '>', '<', '='])
            || v.contains(['*', ' '])
            || v.split('.').any(|p| p == "x")
        {
            return Err(format!(
                "server card: the version {v:?} must be one version (1.0.2), not a range; set Server::version"
            ));
        }
        Ok(())
    }

    /// The `v1` server card. `mcp_url`: the endpoint's public URL, for `remotes`.
    pub(crate) fn server_card(&self, info: &Implementation, mcp_url: Option<&str>) -> Value {
        let mut card = Map::new();
        card.insert("$schema".into(), json!(SERVER_CARD_SCHEMA));
        card.insert("name".into(), json!(self.name(info)));
        card.insert("version".into(), json!(info.version));
        card.insert(
            "description".into(),
            json!(info.description.clone().unwrap_or_default()),
        );
        if let Some(t) = &info.title {
            card.insert("title".into(), json!(t));
        }
        if let Some(w) = &info.website_url {
            card.insert("websiteUrl".into(), json!(w));
        }
        if let Some(r) = &self.repository {
            card.insert("repository".into(), r.to_json());
        }
        if let Some(icons) = &info.icons {
            card.insert("icons".into(), json!(icons));
        }
        if let Some(url) = mcp_url {
            card.insert(
                "remotes".into(),
                json!([{
                    "type": "streamable-http",
                    "url": url,
                    "supportedProtocolVersions": Revision::ALL.map(Revision::as_str),
                }]),
            );
        }
        Value::Object(card)
    }

    /// The MCP registry's `server.json`: the card's identity, the packages, and the remote when
    /// the public URL is known.
    pub(crate) fn server_json(&self, info: &Implementation, mcp_url: Option<&str>) -> Value {
        let mut doc = Map::new();
        doc.insert("$schema".into(), json!(SERVER_JSON_SCHEMA));
        doc.insert("name".into(), json!(self.name(info)));
        if let Some(t) = &info.title {
            doc.insert("title".into(), json!(t));
        }
        doc.insert(
            "description".into(),
            json!(info.description.clone().unwrap_or_default()),
        );
        if let Some(r) = &self.repository {
            doc.insert("repository".into(), r.to_json());
        }
        if let Some(w) = &info.website_url {
            doc.insert("websiteUrl".into(), json!(w));
        }
        doc.insert("version".into(), json!(info.version));
        if !self.packages.is_empty() {
            doc.insert(
                "packages".into(),
                Value::Array(self.packages.iter().map(Package::to_json).collect()),
            );
        }
        if let Some(url) = mcp_url {
            doc.insert(
                "remotes".into(),
                json!([{ "type": "streamable-http", "url": url }]),
            );
        }
        Value::Object(doc)
    }

    /// The AI Catalog of the server: one entry, pointing to the card at `card_url`.
    pub(crate) fn catalog(&self, info: &Implementation, card_url: &str) -> Value {
        json!({
            "specVersion": "1.0",
            "entries": [{
                "identifier": self.identifier(info),
                "type": SERVER_CARD_MEDIA_TYPE,
                "url": card_url,
            }],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> Implementation {
        let mut i = Implementation::new("weather", "1.2.0");
        i.description = Some("Forecasts.".into());
        i
    }

    #[test]
    fn names_and_identifiers() {
        let l = Listing::new("com.example");
        assert_eq!(l.name(&info()), "com.example/weather");
        assert_eq!(l.identifier(&info()), "urn:air:example.com:mcp:weather");
        assert_eq!(l.check(&info()), Ok(()));
    }

    #[test]
    fn what_a_card_refuses() {
        let l = Listing::new("com.example");
        let mut i = info();
        i.description = None;
        assert!(l.check(&i).unwrap_err().contains("Server::description"));
        i.description = Some("x".repeat(101));
        assert!(l.check(&i).unwrap_err().contains("101 characters"));
        let mut i = info();
        i.version = "^1.2".into();
        assert!(l.check(&i).unwrap_err().contains("not a range"));
        let mut i = info();
        i.name = "my server".into();
        assert!(l.check(&i).unwrap_err().contains("Server::name"));
        assert!(Listing::new("bad/ns").check(&info()).is_err());
    }
}
