//! MCP Apps on the wire (`io.modelcontextprotocol/ui`, SEP-1865, stable 2026-01-26): the
//! extension's identifier and how a client declares it, a tool's `_meta.ui` (its view and who
//! may call it), a view's `_meta.ui` (Content Security Policy, permissions, dedicated domain,
//! border), and the policy a host builds from it.
//!
//! The extension is negotiated like every capability: in `initialize` on the handshake
//! revisions (for the session), in each request's `_meta` on 2026-07-28.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::jsonrpc::{RpcError, code};
use super::types::{ClientCapabilities, JsonObject, ResourceContents, Tool};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of a view (an HTML5 document a host renders in a sandboxed iframe).
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The version of the View ↔ Host protocol (`ui/initialize`) of the 2026-01-26 specification.
pub const UI_PROTOCOL_VERSION: &str = "2026-01-26";

/// The deprecated flat `_meta` key of a tool's view (`_meta["ui/resourceUri"]`), which hosts
/// written against drafts of the extension still read; sake sends it beside `_meta.ui`.
pub const RESOURCE_URI_META_KEY: &str = "ui/resourceUri";

/// Whether client capabilities declare the extension with the view MIME type:
/// `extensions["io.modelcontextprotocol/ui"].mimeTypes` holds `text/html;profile=mcp-app`
/// (compared as a MIME type: case and spaces around `;` and `=` do not count).
pub fn declared(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .and_then(|e| e.get(EXTENSION))
        .and_then(|ui| ui.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| {
            types
                .iter()
                .filter_map(Value::as_str)
                .any(|t| same_mime_type(t, MIME_TYPE))
        })
}

/// Whether two MIME types with parameters are the same, ignoring case and optional spaces.
fn same_mime_type(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        s.split(';')
            .map(|part| {
                part.split('=')
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join("=")
                    .to_ascii_lowercase()
            })
            .collect::<Vec<_>>()
            .join(";")
    };
    norm(a) == norm(b)
}

/// The extension's settings a client sends: `{"mimeTypes": ["text/html;profile=mcp-app"]}`.
pub fn client_settings() -> Value {
    json!({ "mimeTypes": [MIME_TYPE] })
}

/// The `ClientCapabilities` object that declares the extension (`data.requiredCapabilities`
/// of -32021).
pub fn capabilities() -> Value {
    json!({ "extensions": { EXTENSION: client_settings() } })
}

/// -32021 (-32602 on the handshake revisions) for a call of a tool only a view may call
/// (`visibility: ["app"]`) by a client that did not declare the extension.
pub fn missing_extension(tool: &str) -> RpcError {
    RpcError::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: tool `{tool}` is called by MCP App views only; declare `extensions[\"{EXTENSION}\"]: {{\"mimeTypes\": [\"{MIME_TYPE}\"]}}` in the client capabilities"
        ),
    )
    .with_data(json!({ "requiredCapabilities": capabilities() }))
}

/// Who may see and call a tool (`_meta.ui.visibility`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Visibility {
    /// The model: the host lists the tool to the agent.
    Model,
    /// The views of this server: they may call it through the host.
    App,
}

impl Visibility {
    /// The word on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Model => "model",
            Visibility::App => "app",
        }
    }

    /// The default visibility: `["model", "app"]`.
    pub const DEFAULT: [Visibility; 2] = [Visibility::Model, Visibility::App];
}

/// A tool's `_meta.ui`: the view that renders its results, and who may call it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolUi {
    /// The `ui://` URI of the view (`resourceUri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may see and call the tool; `None` means `["model", "app"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<Visibility>>,
}

impl ToolUi {
    /// A tool rendered by the view at `resource_uri`, visible to the model and the views.
    pub fn new(resource_uri: impl Into<String>) -> Self {
        ToolUi {
            resource_uri: Some(resource_uri.into()),
            visibility: None,
        }
    }

    /// Sets who may see and call the tool.
    pub fn with_visibility(mut self, visibility: impl IntoIterator<Item = Visibility>) -> Self {
        self.visibility = Some(visibility.into_iter().collect());
        self
    }

    /// A tool's `_meta.ui`, or the deprecated `_meta["ui/resourceUri"]`; `None` for a tool
    /// without a view or visibility. A `_meta.ui` that is not the extension's shape (a
    /// `resourceUri` without `ui://`, an unknown visibility) reads as `None` too: a host must
    /// not render what it cannot trust.
    pub fn of(tool: &Tool) -> Option<ToolUi> {
        let meta = tool.meta.as_ref()?;
        let mut ui: ToolUi = match meta.get("ui") {
            Some(v) => serde_json::from_value(v.clone()).ok()?,
            None => ToolUi::default(),
        };
        if ui.resource_uri.is_none() {
            ui.resource_uri = meta
                .get(RESOURCE_URI_META_KEY)
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if ui
            .resource_uri
            .as_deref()
            .is_some_and(|u| sake_rules::apps::check_ui_uri(u).is_err())
        {
            return None;
        }
        (ui.resource_uri.is_some() || ui.visibility.is_some()).then_some(ui)
    }

    /// Who may see and call the tool, the default filled in.
    pub fn visibility(&self) -> &[Visibility] {
        self.visibility.as_deref().unwrap_or(&Visibility::DEFAULT)
    }

    /// Whether a host lists the tool to its model.
    pub fn visible_to_model(&self) -> bool {
        self.visibility().contains(&Visibility::Model)
    }

    /// Whether a view of the same server may call the tool.
    pub fn callable_by_app(&self) -> bool {
        self.visibility().contains(&Visibility::App)
    }

    /// The `_meta` object of a tool listing: `ui`, and the deprecated flat key beside it.
    pub fn to_meta(&self) -> JsonObject {
        let mut meta = Map::new();
        meta.insert(
            "ui".into(),
            serde_json::to_value(self).unwrap_or_else(|_| json!({})),
        );
        if let Some(uri) = &self.resource_uri {
            meta.insert(RESOURCE_URI_META_KEY.into(), Value::String(uri.clone()));
        }
        meta
    }
}

/// The origins a view may reach (`_meta.ui.csp`). Each list is empty by default: a view
/// reaches nothing outside its own document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Csp {
    /// Origins for `fetch`, XHR and WebSocket (`connect-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins for nested iframes (`frame-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Origins the document's base URI may have (`base-uri`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

impl Csp {
    /// No origin at all.
    pub fn new() -> Self {
        Csp::default()
    }

    /// Adds origins for `fetch`, XHR and WebSocket.
    pub fn connect<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.connect_domains
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// Adds origins for scripts, styles, images, fonts and media.
    pub fn resources<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.resource_domains
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// Adds origins for nested iframes.
    pub fn frames<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.frame_domains
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// Adds origins for the document's base URI.
    pub fn base_uris<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.base_uri_domains
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// The first origin that is not one (`sake_rules::apps::check_origin`), with its list's
    /// name and why.
    pub(crate) fn invalid(&self) -> Option<(&'static str, &str, sake_rules::apps::OriginError)> {
        self.lists().into_iter().find_map(|(name, list)| {
            list.iter().find_map(|o| {
                sake_rules::apps::check_origin(o)
                    .err()
                    .map(|e| (name, o.as_str(), e))
            })
        })
    }

    fn lists(&self) -> [(&'static str, &Vec<String>); 4] {
        [
            ("connectDomains", &self.connect_domains),
            ("resourceDomains", &self.resource_domains),
            ("frameDomains", &self.frame_domains),
            ("baseUriDomains", &self.base_uri_domains),
        ]
    }
}

/// The browser capabilities a view asks for (`_meta.ui.permissions`); a host may grant them
/// in the iframe's `allow` attribute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Permissions {
    /// `camera`.
    pub camera: bool,
    /// `microphone`.
    pub microphone: bool,
    /// `geolocation`.
    pub geolocation: bool,
    /// `clipboard-write`.
    pub clipboard_write: bool,
}

impl Permissions {
    /// None of them.
    pub fn new() -> Self {
        Permissions::default()
    }

    const NAMES: [(&'static str, &'static str); 4] = [
        ("camera", "camera"),
        ("microphone", "microphone"),
        ("geolocation", "geolocation"),
        ("clipboardWrite", "clipboard-write"),
    ];

    fn flags(&self) -> [bool; 4] {
        [
            self.camera,
            self.microphone,
            self.geolocation,
            self.clipboard_write,
        ]
    }

    /// Whether none is asked for.
    pub fn is_empty(&self) -> bool {
        !self.flags().contains(&true)
    }

    /// The iframe `allow` attribute that grants them (`camera; microphone`), as the host
    /// bridge of `@modelcontextprotocol/ext-apps` builds it.
    pub fn allow_attribute(&self) -> String {
        Self::NAMES
            .iter()
            .zip(self.flags())
            .filter(|(_, on)| *on)
            .map(|((_, policy), _)| *policy)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Serialize for Permissions {
    /// `{"camera": {}, …}`: each permission asked for, with an empty object.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let on: Vec<&str> = Self::NAMES
            .iter()
            .zip(self.flags())
            .filter(|(_, on)| *on)
            .map(|((key, _), _)| *key)
            .collect();
        let mut map = s.serialize_map(Some(on.len()))?;
        for key in on {
            map.serialize_entry(key, &Map::new())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Permissions {
    /// A permission is asked for when its key is present (with an object; `true` is read as
    /// asked too, as some hosts write it).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let on = |key: &str| {
            map.get(key)
                .is_some_and(|v| v.is_object() || v == &Value::Bool(true))
        };
        Ok(Permissions {
            camera: on("camera"),
            microphone: on("microphone"),
            geolocation: on("geolocation"),
            clipboard_write: on("clipboardWrite"),
        })
    }
}

/// A view's `_meta.ui`: what a host needs to render it safely.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ViewMeta {
    /// The origins it may reach; `None`: none (the host's restrictive default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<Csp>,
    /// The browser capabilities it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// A dedicated origin for the view's sandbox, in the host's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether it asks the host for a visible border and background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

impl ViewMeta {
    /// The `_meta.ui` of the first content of a `resources/read` result, or of a resource
    /// listing's `_meta`; the default (nothing asked for) when absent or malformed.
    pub fn of_meta(meta: Option<&JsonObject>) -> ViewMeta {
        meta.and_then(|m| m.get("ui"))
            .and_then(|ui| serde_json::from_value(ui.clone()).ok())
            .unwrap_or_default()
    }

    /// The `_meta.ui` of resource contents.
    pub fn of_contents(contents: &ResourceContents) -> ViewMeta {
        match contents {
            ResourceContents::Text(t) => ViewMeta::of_meta(t.meta.as_ref()),
            ResourceContents::Blob(b) => ViewMeta::of_meta(b.meta.as_ref()),
        }
    }

    /// Whether it asks for nothing (no `_meta.ui` needed).
    pub fn is_empty(&self) -> bool {
        self == &ViewMeta::default()
    }

    /// The `_meta` object that carries it (`{"ui": {…}}`); `None` when it asks for nothing.
    pub fn to_meta(&self) -> Option<JsonObject> {
        if self.is_empty() {
            return None;
        }
        let mut meta = Map::new();
        meta.insert(
            "ui".into(),
            serde_json::to_value(self).unwrap_or_else(|_| json!({})),
        );
        Some(meta)
    }

    /// The `Content-Security-Policy` a host applies to the view, as the specification builds
    /// it ("Content Security Policy Enforcement"): the restrictive default when the view
    /// declares no `csp`; otherwise `'self'` plus its origins in each directive, `frame-src
    /// 'none'` and `base-uri 'self'` unless it names origins for them, `object-src 'none'`
    /// always. An origin that is not one (a server may send anything) is left out, so that
    /// it cannot add sources or directives of its own.
    pub fn content_security_policy(&self) -> String {
        let Some(csp) = &self.csp else {
            return [
                "default-src 'none'",
                "script-src 'self' 'unsafe-inline'",
                "style-src 'self' 'unsafe-inline'",
                "img-src 'self' data:",
                "media-src 'self' data:",
                "connect-src 'none'",
                "frame-src 'none'",
                "object-src 'none'",
                "base-uri 'self'",
            ]
            .join("; ");
        };
        let valid = |list: &[String]| -> Vec<String> {
            list.iter()
                .filter(|o| match sake_rules::apps::check_origin(o) {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(origin = %o, reason = %e, "a view's CSP names something that is not an origin; it is left out");
                        false
                    }
                })
                .cloned()
                .collect()
        };
        let with = |base: &str, extra: &[String]| {
            if extra.is_empty() {
                base.to_owned()
            } else {
                format!("{base} {}", extra.join(" "))
            }
        };
        let resources = valid(&csp.resource_domains);
        let connect = valid(&csp.connect_domains);
        let frames = valid(&csp.frame_domains);
        let bases = valid(&csp.base_uri_domains);
        [
            "default-src 'none'".to_owned(),
            with("script-src 'self' 'unsafe-inline'", &resources),
            with("style-src 'self' 'unsafe-inline'", &resources),
            with("connect-src 'self'", &connect),
            with("img-src 'self' data:", &resources),
            with("font-src 'self'", &resources),
            with("media-src 'self' data:", &resources),
            if frames.is_empty() {
                "frame-src 'none'".to_owned()
            } else {
                with("frame-src", &frames)
            },
            "object-src 'none'".to_owned(),
            if bases.is_empty() {
                "base-uri 'self'".to_owned()
            } else {
                with("base-uri", &bases)
            },
        ]
        .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_extension_is_declared_with_the_view_mime_type() {
        assert!(declared(&caps(capabilities())));
        assert!(declared(&caps(json!({"extensions": {EXTENSION: {
            "mimeTypes": ["text/plain", "Text/HTML; Profile = mcp-app"]}}}))));
        for not in [
            json!({}),
            json!({"extensions": {}}),
            json!({"extensions": {EXTENSION: {}}}),
            json!({"extensions": {EXTENSION: {"mimeTypes": []}}}),
            json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}}),
            json!({"extensions": {EXTENSION: {"mimeTypes": "text/html;profile=mcp-app"}}}),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
            json!({"experimental": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}),
        ] {
            assert!(!declared(&caps(not.clone())), "{not}");
        }
    }

    #[test]
    fn a_tools_meta_reads_both_forms() {
        let tool = |meta: Value| {
            let mut t = Tool::new("t", json!({"type": "object"}));
            t.meta = Some(serde_json::from_value(meta).unwrap());
            ToolUi::of(&t)
        };
        let ui = tool(json!({"ui": {"resourceUri": "ui://a/b", "visibility": ["app"]}})).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/b"));
        assert!(!ui.visible_to_model() && ui.callable_by_app());
        let ui = tool(json!({"ui/resourceUri": "ui://flat"})).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://flat"));
        assert_eq!(ui.visibility(), Visibility::DEFAULT);
        // The nested key wins over the deprecated one.
        let ui = tool(json!({"ui": {"resourceUri": "ui://new"}, "ui/resourceUri": "ui://old"}));
        assert_eq!(ui.unwrap().resource_uri.as_deref(), Some("ui://new"));
        assert_eq!(tool(json!({"other": 1})), None);
        assert_eq!(tool(json!({"ui": {"resourceUri": "https://x"}})), None);
        assert_eq!(tool(json!({"ui": {"visibility": ["robot"]}})), None);
        assert_eq!(ToolUi::of(&Tool::new("t", json!({}))), None);
    }

    #[test]
    fn a_tools_meta_carries_the_flat_key_too() {
        let ui = ToolUi::new("ui://a").with_visibility([Visibility::App]);
        assert_eq!(
            Value::Object(ui.to_meta()),
            json!({"ui": {"resourceUri": "ui://a", "visibility": ["app"]}, "ui/resourceUri": "ui://a"})
        );
    }

    #[test]
    fn view_meta_round_trips_in_the_specifications_shape() {
        let meta = ViewMeta {
            csp: Some(
                Csp::new()
                    .connect(["https://api.example.com"])
                    .resources(["https://cdn.example.com"]),
            ),
            permissions: Some(Permissions {
                camera: true,
                clipboard_write: true,
                ..Permissions::new()
            }),
            domain: Some("a.example".into()),
            prefers_border: Some(true),
        };
        let wire = json!({"ui": {
            "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]},
            "permissions": {"camera": {}, "clipboardWrite": {}},
            "domain": "a.example",
            "prefersBorder": true,
        }});
        assert_eq!(Value::Object(meta.to_meta().unwrap()), wire);
        let back = ViewMeta::of_meta(Some(&serde_json::from_value(wire).unwrap()));
        assert_eq!(back, meta);
        assert_eq!(
            meta.permissions.unwrap().allow_attribute(),
            "camera; clipboard-write"
        );
        assert_eq!(ViewMeta::default().to_meta(), None);
    }

    #[test]
    fn the_policy_is_the_specifications() {
        assert_eq!(
            ViewMeta::default().content_security_policy(),
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'"
        );
        let meta = ViewMeta {
            csp: Some(
                Csp::new()
                    .connect(["https://api.example.com", "https://x; script-src *"])
                    .resources(["https://*.cdn.example"])
                    .frames(["https://www.youtube.com"]),
            ),
            ..ViewMeta::default()
        };
        assert_eq!(
            meta.content_security_policy(),
            "default-src 'none'; script-src 'self' 'unsafe-inline' https://*.cdn.example; style-src 'self' 'unsafe-inline' https://*.cdn.example; connect-src 'self' https://api.example.com; img-src 'self' data: https://*.cdn.example; font-src 'self' https://*.cdn.example; media-src 'self' data: https://*.cdn.example; frame-src https://www.youtube.com; object-src 'none'; base-uri 'self'"
        );
        assert_eq!(
            meta.csp.as_ref().unwrap().invalid().map(|(l, o, _)| (l, o)),
            Some(("connectDomains", "https://x; script-src *"))
        );
    }

    #[test]
    fn the_missing_extension_error_names_what_to_declare() {
        let e = missing_extension("refresh");
        assert_eq!(e.code, -32021);
        assert_eq!(
            e.data,
            Some(
                json!({"requiredCapabilities": {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}})
            )
        );
    }
}
