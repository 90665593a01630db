//! The protocol's data types, in their 2026-07-28 shape (the superset of all revisions).
//!
//! Older revisions see these through the rendering step (`render.rs`), which drops what a
//! revision does not define. Field names follow Rust conventions; the wire names are camelCase.
//!
//! By topic, each in a file of its own and all at this path: what messages carry (`content.rs`),
//! what the lists hold (`definitions.rs`), the methods' results (`results.rs`), what clients and
//! servers declare (`capabilities.rs`), and what the server asks a client (`questions.rs`); the
//! pieces they share (roles, annotations, icons, `Implementation`) are here.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object, as used for `_meta` and open-ended capability objects.
pub type JsonObject = Map<String, Value>;

/// Encodes bytes as standard Base64 with padding, as every blob on the wire is.
pub(crate) fn base64_encode(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The speaker of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The human side.
    User,
    /// The model side.
    Assistant,
}

/// Hints about how a client should treat an object. Start from `Annotations::default()`
/// and set what applies; [`Content::with_annotations`] shows one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the object is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// Sets who the object is for (`audience`).
    pub fn with_audience(mut self, audience: impl IntoIterator<Item = Role>) -> Self {
        self.audience = Some(audience.into_iter().collect());
        self
    }

    /// Sets the importance, from 0 (least) to 1 (most).
    pub fn with_priority(mut self, priority: f64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Sets the ISO 8601 time of the last change (`lastModified`).
    pub fn with_last_modified(mut self, last_modified: impl Into<String>) -> Self {
        self.last_modified = Some(last_modified.into());
        self
    }
}

/// An icon a client may show (2025-11-25 and later).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// An `https:` or `data:` URI.
    pub src: String,
    /// The image's MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// An icon at `src`: an `https:` or `data:` URI.
    ///
    /// ```
    /// let icon = sake::Icon::new("https://example.com/icon.png")
    ///     .with_mime_type("image/png")
    ///     .with_sizes(["48x48"]);
    /// assert_eq!(icon.sizes.as_deref(), Some(&["48x48".to_owned()][..]));
    /// ```
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
        }
    }

    /// Sets the MIME type (`mimeType`).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the sizes, such as `"48x48"` or `"any"`.
    pub fn with_sizes(mut self, sizes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.sizes = Some(sizes.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the theme the icon is for: `"light"` or `"dark"`.
    pub fn with_theme(mut self, theme: impl Into<String>) -> Self {
        self.theme = Some(theme.into());
        self
    }
}

/// Names a client or a server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its home page (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
}

impl Implementation {
    /// A name and a version, nothing else.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: None,
        }
    }

    /// Sets the display name (`title`).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the `description`.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the home page (`websiteUrl`).
    pub fn with_website_url(mut self, website_url: impl Into<String>) -> Self {
        self.website_url = Some(website_url.into());
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }
}

mod capabilities;
mod content;
mod definitions;
mod questions;
mod results;

pub use capabilities::*;
pub use content::*;
pub use definitions::*;
pub use questions::*;
pub use results::*;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_blocks_serialise_with_their_type_tags() {
        let v = serde_json::to_value(vec![
            Content::text("hi"),
            Content::image_base64("AAAA", "image/png"),
            Content::resource_link("test://x", "x"),
            Content::resource(ResourceContents::text("test://e", Some("text/plain"), "e")),
        ])
        .unwrap();
        assert_eq!(
            v,
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "test://x", "name": "x"},
                {"type": "resource", "resource": {"uri": "test://e", "mimeType": "text/plain", "text": "e"}}
            ])
        );
    }

    #[test]
    fn structured_results_mirror_their_json_as_text() {
        let r = CallToolResult::structured(&json!({"sum": 3})).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"content": [{"type": "text", "text": "{\"sum\":3}"}], "structuredContent": {"sum": 3}})
        );
    }

    #[test]
    fn completion_is_capped_at_one_hundred_values() {
        let c = Completion::new((0..150).map(|i| i.to_string()).collect());
        assert_eq!(c.values.len(), 100);
        assert_eq!(c.total, Some(150));
        assert_eq!(c.has_more, Some(true));
    }

    fn meta() -> JsonObject {
        let mut m = JsonObject::new();
        m.insert("k".into(), json!(1));
        m
    }

    #[test]
    fn listing_builders_set_every_wire_field() {
        let icon = Icon::new("https://x/i.png")
            .with_mime_type("image/png")
            .with_sizes(["48x48", "any"])
            .with_theme("dark");
        let icon_json = json!({"src": "https://x/i.png", "mimeType": "image/png", "sizes": ["48x48", "any"], "theme": "dark"});
        let ann = Annotations::default()
            .with_audience([Role::User, Role::Assistant])
            .with_priority(0.5)
            .with_last_modified("2025-01-01T00:00:00Z");
        let ann_json = json!({"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"});

        let tool = Tool::new("t", json!({"type": "object"}))
            .with_title("T")
            .with_description("d")
            .with_icons([icon.clone()])
            .with_output_schema(json!({"type": "object"}))
            .with_annotations(
                ToolAnnotations::default()
                    .with_title("A")
                    .with_read_only_hint(true)
                    .with_destructive_hint(false)
                    .with_idempotent_hint(true)
                    .with_open_world_hint(false),
            )
            .with_meta(meta());
        assert_eq!(
            serde_json::to_value(&tool).unwrap(),
            json!({"name": "t", "title": "T", "description": "d", "icons": [icon_json],
                   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
                   "annotations": {"title": "A", "readOnlyHint": true, "destructiveHint": false,
                                   "idempotentHint": true, "openWorldHint": false},
                   "_meta": {"k": 1}})
        );

        let prompt = Prompt::new("p")
            .with_title("P")
            .with_description("d")
            .with_arguments([PromptArgument::new("a")
                .with_title("A")
                .with_description("an a")
                .with_required(false)])
            .with_icons([icon.clone()])
            .with_meta(meta());
        assert_eq!(
            serde_json::to_value(&prompt).unwrap(),
            json!({"name": "p", "title": "P", "description": "d",
                   "arguments": [{"name": "a", "title": "A", "description": "an a", "required": false}],
                   "icons": [icon_json], "_meta": {"k": 1}})
        );

        let resource = Resource::new("u://r", "r")
            .with_title("R")
            .with_description("d")
            .with_mime_type("text/plain")
            .with_size(3)
            .with_icons([icon.clone()])
            .with_annotations(ann.clone())
            .with_meta(meta());
        let link = ResourceLink::new("u://r", "r")
            .with_title("R")
            .with_description("d")
            .with_mime_type("text/plain")
            .with_size(3)
            .with_icons([icon.clone()])
            .with_annotations(ann.clone())
            .with_meta(meta());
        let resource_json = json!({"uri": "u://r", "name": "r", "title": "R", "description": "d",
                                   "mimeType": "text/plain", "size": 3, "icons": [icon_json],
                                   "annotations": ann_json, "_meta": {"k": 1}});
        assert_eq!(serde_json::to_value(&resource).unwrap(), resource_json);
        let mut link_json = resource_json.clone();
        link_json["type"] = json!("resource_link");
        assert_eq!(
            serde_json::to_value(Content::ResourceLink(link)).unwrap(),
            link_json
        );

        let template = ResourceTemplate::new("u://{id}", "r")
            .with_title("R")
            .with_description("d")
            .with_mime_type("text/plain")
            .with_icons([icon.clone()])
            .with_annotations(ann)
            .with_meta(meta());
        assert_eq!(
            serde_json::to_value(&template).unwrap(),
            json!({"uriTemplate": "u://{id}", "name": "r", "title": "R", "description": "d",
                   "mimeType": "text/plain", "icons": [icon_json], "annotations": ann_json,
                   "_meta": {"k": 1}})
        );

        let info = Implementation::new("n", "1")
            .with_title("N")
            .with_description("d")
            .with_website_url("https://x")
            .with_icons([icon]);
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            json!({"name": "n", "version": "1", "title": "N", "description": "d",
                   "websiteUrl": "https://x", "icons": [icon_json]})
        );
    }

    #[test]
    fn content_and_result_builders_set_every_wire_field() {
        let ann = Annotations::default().with_priority(1.0);
        let blocks = vec![
            Content::Text(
                TextContent::new("t")
                    .with_annotations(ann.clone())
                    .with_meta(meta()),
            ),
            Content::Audio(
                MediaContent::new("AAAA", "audio/wav")
                    .with_annotations(ann.clone())
                    .with_meta(meta()),
            ),
            Content::Resource(
                EmbeddedResource::new(ResourceContents::Blob(
                    BlobResourceContents::from_bytes("u://b", [0u8, 1, 2])
                        .with_mime_type("application/octet-stream")
                        .with_meta(meta()),
                ))
                .with_annotations(ann.clone())
                .with_meta(meta()),
            ),
            Content::resource(ResourceContents::Text(
                TextResourceContents::new("u://t", "x")
                    .with_mime_type("text/plain")
                    .with_meta(meta()),
            ))
            .with_meta(meta()),
            Content::image(b"png", "image/png").with_meta(meta()),
        ];
        let result = CallToolResult::success(blocks).with_meta(meta());
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"content": [
                {"type": "text", "text": "t", "annotations": {"priority": 1.0}, "_meta": {"k": 1}},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav", "annotations": {"priority": 1.0}, "_meta": {"k": 1}},
                {"type": "resource", "resource": {"uri": "u://b", "mimeType": "application/octet-stream", "blob": "AAEC", "_meta": {"k": 1}},
                 "annotations": {"priority": 1.0}, "_meta": {"k": 1}},
                {"type": "resource", "resource": {"uri": "u://t", "mimeType": "text/plain", "text": "x", "_meta": {"k": 1}}, "_meta": {"k": 1}},
                {"type": "image", "data": "cG5n", "mimeType": "image/png", "_meta": {"k": 1}},
            ], "_meta": {"k": 1}})
        );

        let prompt = GetPromptResult::new(vec![
            PromptMessage::new(Role::Assistant, "a"),
            PromptMessage::user("u"),
        ])
        .with_description("d")
        .with_meta(meta());
        assert_eq!(
            serde_json::to_value(&prompt).unwrap(),
            json!({"description": "d", "messages": [
                {"role": "assistant", "content": {"type": "text", "text": "a"}},
                {"role": "user", "content": {"type": "text", "text": "u"}},
            ], "_meta": {"k": 1}})
        );

        let read = ReadResourceResult::new(vec![ResourceContents::blob("u://b", None, "hi")])
            .with_meta(meta());
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            json!({"contents": [{"uri": "u://b", "blob": "aGk="}], "_meta": {"k": 1}})
        );

        let completion = Completion::new(vec!["a".into()])
            .with_total(10)
            .with_has_more(true);
        assert_eq!(
            serde_json::to_value(&completion).unwrap(),
            json!({"values": ["a"], "total": 10, "hasMore": true})
        );
    }

    #[test]
    fn client_side_builders_set_every_wire_field() {
        let request = CreateMessageRequest::new(
            vec![
                SamplingMessage::user_text("q"),
                SamplingMessage::assistant_text("a"),
                SamplingMessage::new(Role::User, json!([{"type": "text", "text": "r"}])),
            ],
            9,
        )
        .with_system_prompt("s")
        .with_temperature(0.5)
        .with_stop_sequences(["x"])
        .with_model_preferences(json!({"intelligencePriority": 1}))
        .with_include_context("thisServer")
        .with_metadata(meta())
        .with_tools([json!({"name": "t"})])
        .with_tool_choice(json!({"mode": "auto"}));
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"messages": [
                {"role": "user", "content": {"type": "text", "text": "q"}},
                {"role": "assistant", "content": {"type": "text", "text": "a"}},
                {"role": "user", "content": [{"type": "text", "text": "r"}]},
            ], "maxTokens": 9, "systemPrompt": "s", "temperature": 0.5, "stopSequences": ["x"],
               "modelPreferences": {"intelligencePriority": 1}, "includeContext": "thisServer",
               "metadata": {"k": 1}, "tools": [{"name": "t"}], "toolChoice": {"mode": "auto"}})
        );

        let answer =
            CreateMessageResult::new(Role::Assistant, json!({"type": "text", "text": "p"}), "m")
                .with_stop_reason("endTurn");
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "p"}, "model": "m", "stopReason": "endTurn"})
        );

        let url = ElicitRequest::url("open", "https://x/auth")
            .with_elicitation_id("e1")
            .with_meta(meta());
        assert!(url.is_url());
        assert_eq!(
            serde_json::to_value(&url).unwrap(),
            json!({"mode": "url", "message": "open", "url": "https://x/auth", "elicitationId": "e1", "_meta": {"k": 1}})
        );
        let form = ElicitRequest::form("name?", json!({"type": "object"}));
        assert_eq!(
            serde_json::to_value(&form).unwrap(),
            json!({"message": "name?", "requestedSchema": {"type": "object"}})
        );
        assert_eq!(
            serde_json::to_value(ElicitResult::new(ElicitAction::Accept).with_content(meta()))
                .unwrap(),
            json!({"action": "accept", "content": {"k": 1}})
        );
        assert_eq!(
            serde_json::to_value(ListRootsResult::new(vec![
                Root::new("file:///w").with_name("w").with_meta(meta())
            ]))
            .unwrap(),
            json!({"roots": [{"uri": "file:///w", "name": "w", "_meta": {"k": 1}}]})
        );
    }

    #[test]
    fn capability_and_handshake_builders_set_every_wire_field() {
        let client = ClientCapabilities::default()
            .with_roots(RootsCapability::default().with_list_changed(true))
            .with_sampling(
                SamplingCapability::default()
                    .with_context(JsonObject::new())
                    .with_tools(JsonObject::new()),
            )
            .with_elicitation(
                ElicitationCapability::default()
                    .with_form(JsonObject::new())
                    .with_url(JsonObject::new()),
            )
            .with_experimental(meta())
            .with_extensions(meta())
            .with_tasks(meta());
        assert_eq!(
            serde_json::to_value(&client).unwrap(),
            json!({"roots": {"listChanged": true}, "sampling": {"context": {}, "tools": {}},
                   "elicitation": {"form": {}, "url": {}}, "experimental": {"k": 1},
                   "extensions": {"k": 1}, "tasks": {"k": 1}})
        );

        let server = ServerCapabilities::default()
            .with_experimental(meta())
            .with_logging(JsonObject::new())
            .with_completions(JsonObject::new())
            .with_prompts(ListChangedCapability::default().with_list_changed(false))
            .with_resources(
                ResourcesCapability::default()
                    .with_subscribe(true)
                    .with_list_changed(true),
            )
            .with_tools(ListChangedCapability::default())
            .with_extensions(meta());
        let server_json = json!({"experimental": {"k": 1}, "logging": {}, "completions": {},
                                 "prompts": {"listChanged": false},
                                 "resources": {"subscribe": true, "listChanged": true},
                                 "tools": {}, "extensions": {"k": 1}});
        assert_eq!(serde_json::to_value(&server).unwrap(), server_json);

        let discover = DiscoverResult::new(["2026-07-28"], server.clone())
            .with_instructions("i")
            .with_ttl_ms(1000)
            .with_cache_scope("public")
            .with_meta(meta());
        assert_eq!(
            serde_json::to_value(&discover).unwrap(),
            json!({"supportedVersions": ["2026-07-28"], "capabilities": server_json,
                   "instructions": "i", "ttlMs": 1000, "cacheScope": "public", "_meta": {"k": 1}})
        );

        let init = InitializeResult::new("2025-11-25", server, Implementation::new("s", "1"))
            .with_instructions("i");
        assert_eq!(
            serde_json::to_value(&init).unwrap(),
            json!({"protocolVersion": "2025-11-25", "capabilities": server_json,
                   "serverInfo": {"name": "s", "version": "1"}, "instructions": "i"})
        );
    }

    #[test]
    fn elicitation_capability_defaults_to_form() {
        let c: ElicitationCapability = serde_json::from_value(json!({})).unwrap();
        assert!(c.allows_form() && !c.allows_url());
        let c: ElicitationCapability = serde_json::from_value(json!({"url": {}})).unwrap();
        assert!(!c.allows_form() && c.allows_url());
    }
}
