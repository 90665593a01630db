//! The protocol's data types, in their 2026-07-28 shape (the superset of all revisions).
//!
//! Older revisions see these through the rendering step (`render.rs`), which drops what a
//! revision does not define. Field names follow Rust conventions; the wire names are camelCase.

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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

/// Text content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Optional hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl TextContent {
    /// A text block's body; [`Content::text`] makes the block.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Image or audio content: Base64 data and a MIME type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MediaContent {
    /// Base64-encoded bytes.
    pub data: String,
    /// The media's MIME type.
    pub mime_type: String,
    /// Optional hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl MediaContent {
    /// An image's or an audio clip's body from Base64 `data`; [`Content::image_base64`] and
    /// [`Content::audio_base64`] make the block.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        MediaContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A link to a resource the client may read (2025-06-18 and later).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Optional hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ResourceLink {
    /// A link to the resource at `uri` named `name`; [`Content::resource_link`] makes a block
    /// with no other field.
    ///
    /// ```
    /// use sake::prelude::*;
    ///
    /// let link = Content::ResourceLink(
    ///     sake::ResourceLink::new("docs://about", "about")
    ///         .with_title("About")
    ///         .with_mime_type("text/plain"),
    /// );
    /// assert_eq!(
    ///     serde_json::to_value(&link).unwrap(),
    ///     serde_json::json!({"type": "resource_link", "uri": "docs://about", "name": "about",
    ///                        "title": "About", "mimeType": "text/plain"})
    /// );
    /// ```
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
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

    /// Sets the MIME type (`mimeType`).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes.
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A resource's contents embedded in a message or result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Optional hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl EmbeddedResource {
    /// These contents, embedded; [`Content::resource`] makes the block.
    pub fn new(resource: ResourceContents) -> Self {
        EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
        }
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A content block of a tool result or a prompt message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum Content {
    /// `{"type":"text"}`
    #[serde(rename = "text")]
    Text(TextContent),
    /// `{"type":"image"}`
    #[serde(rename = "image")]
    Image(MediaContent),
    /// `{"type":"audio"}`
    #[serde(rename = "audio")]
    Audio(MediaContent),
    /// `{"type":"resource_link"}` (2025-06-18 and later)
    #[serde(rename = "resource_link")]
    ResourceLink(ResourceLink),
    /// `{"type":"resource"}`
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent::new(text))
    }

    /// An image from raw bytes (encoded to Base64 here).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::image_base64(base64_encode(bytes), mime_type)
    }

    /// An image already encoded as Base64.
    pub fn image_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image(MediaContent::new(data, mime_type))
    }

    /// Audio from raw bytes (encoded to Base64 here).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::audio_base64(base64_encode(bytes), mime_type)
    }

    /// Audio already encoded as Base64.
    pub fn audio_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio(MediaContent::new(data, mime_type))
    }

    /// A link to a resource. For a title, a MIME type or a size, wrap a [`ResourceLink`]:
    /// `Content::ResourceLink(ResourceLink::new(uri, name).with_title(…))`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink(ResourceLink::new(uri, name))
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> Self {
        Content::Resource(EmbeddedResource::new(contents))
    }

    /// Sets the block's annotations.
    ///
    /// ```
    /// use sake::prelude::*;
    ///
    /// let block = Content::text("Only for you.")
    ///     .with_annotations(Annotations::default().with_audience([Role::User]).with_priority(0.9));
    /// assert_eq!(
    ///     serde_json::to_value(&block).unwrap(),
    ///     serde_json::json!({"type": "text", "text": "Only for you.",
    ///                        "annotations": {"audience": ["user"], "priority": 0.9}})
    /// );
    /// ```
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        let slot = match &mut self {
            Content::Text(c) => &mut c.annotations,
            Content::Image(c) | Content::Audio(c) => &mut c.annotations,
            Content::ResourceLink(c) => &mut c.annotations,
            Content::Resource(c) => &mut c.annotations,
        };
        *slot = Some(annotations);
        self
    }

    /// Sets the block's `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        let slot = match &mut self {
            Content::Text(c) => &mut c.meta,
            Content::Image(c) | Content::Audio(c) => &mut c.meta,
            Content::ResourceLink(c) => &mut c.meta,
            Content::Resource(c) => &mut c.meta,
        };
        *slot = Some(meta);
        self
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::text(text)
    }
}

/// Text contents of a resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl TextResourceContents {
    /// The text of the resource at `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        }
    }

    /// Sets the MIME type (`mimeType`).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Binary contents of a resource, Base64-encoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded bytes.
    pub blob: String,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl BlobResourceContents {
    /// The bytes of the resource at `uri`, already encoded as Base64 (`blob`).
    ///
    /// ```
    /// use sake::prelude::*;
    ///
    /// let contents = ResourceContents::Blob(
    ///     sake::BlobResourceContents::new("test://logo", "iVBORw0KGgo=").with_mime_type("image/png"),
    /// );
    /// assert_eq!(contents.uri(), "test://logo");
    /// ```
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
        }
    }

    /// The bytes of the resource at `uri`, encoded to Base64 here.
    pub fn from_bytes(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        BlobResourceContents::new(uri, base64_encode(bytes))
    }

    /// Sets the MIME type (`mimeType`).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// The contents of a resource: text or a blob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text.
    Text(TextResourceContents),
    /// Bytes.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        let mut contents = TextResourceContents::new(uri, text);
        contents.mime_type = mime_type.map(str::to_owned);
        ResourceContents::Text(contents)
    }

    /// Binary contents from raw bytes (encoded to Base64 here).
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: impl AsRef<[u8]>) -> Self {
        let mut contents = BlobResourceContents::from_bytes(uri, bytes);
        contents.mime_type = mime_type.map(str::to_owned);
        ResourceContents::Blob(contents)
    }

    /// The URI of the contents.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }
}

/// The result of `tools/call`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<Content>,
    /// Structured content, conforming to the tool's `outputSchema` (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Box<RawValue>>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn success(content: Vec<Content>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A failed result (`isError: true`) with one text block.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(message)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// A successful result whose structured content is `value`, mirrored as a text block.
    pub fn structured<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        let raw = serde_json::value::to_raw_value(value)?;
        Ok(CallToolResult {
            content: vec![Content::text(raw.get())],
            structured_content: Some(raw),
            ..Default::default()
        })
    }

    /// Whether `isError` is set.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
}

impl PromptMessage {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<Content>) -> Self {
        PromptMessage {
            role,
            content: content.into(),
        }
    }

    /// A message from the user.
    pub fn user(content: impl Into<Content>) -> Self {
        PromptMessage::new(Role::User, content)
    }

    /// A message from the assistant.
    pub fn assistant(content: impl Into<Content>) -> Self {
        PromptMessage::new(Role::Assistant, content)
    }
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl GetPromptResult {
    /// A prompt of these messages. A `#[prompt]` function may also return the messages alone;
    /// this adds a description or `_meta`.
    ///
    /// ```
    /// use sake::prelude::*;
    ///
    /// let result = GetPromptResult::new(vec![
    ///     PromptMessage::user("Review this code."),
    ///     PromptMessage::assistant("Which file?"),
    /// ])
    /// .with_description("A code review");
    /// assert_eq!(result.messages.len(), 2);
    /// ```
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            description: None,
            messages,
            meta: None,
        }
    }

    /// Sets the `description`.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// The result of `resources/read`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// The contents (never empty for a resource that exists).
    pub contents: Vec<ResourceContents>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ReadResourceResult {
    /// A read of these contents. A `#[resource]` function may also return the contents
    /// alone; this adds `_meta`.
    ///
    /// ```
    /// use sake::prelude::*;
    ///
    /// let result = ReadResourceResult::new(vec![ResourceContents::text(
    ///     "notes://today",
    ///     Some("text/plain"),
    ///     "Buy milk.",
    /// )]);
    /// assert_eq!(result.contents[0].uri(), "notes://today");
    /// ```
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult {
            contents,
            meta: None,
        }
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Completion values for `completion/complete`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// At most 100 values.
    pub values: Vec<String>,
    /// The number of values there are in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more values than returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// The most values one answer may carry.
    pub const MAX_VALUES: usize = 100;

    /// Completion values; more than 100 are cut to 100, with `total` and `hasMore` set.
    pub fn new(mut values: Vec<String>) -> Self {
        let total = values.len();
        if total > Self::MAX_VALUES {
            values.truncate(Self::MAX_VALUES);
            Completion {
                values,
                total: Some(total as u64),
                has_more: Some(true),
            }
        } else {
            Completion {
                values,
                total: None,
                has_more: None,
            }
        }
    }

    /// Sets the number of values there are in all (`total`).
    pub fn with_total(mut self, total: u64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets whether there are more values than returned (`hasMore`).
    pub fn with_has_more(mut self, has_more: bool) -> Self {
        self.has_more = Some(has_more);
        self
    }
}

impl From<Vec<String>> for Completion {
    fn from(values: Vec<String>) -> Self {
        Completion::new(values)
    }
}

/// Hints about a tool's behaviour. Clients must not trust them for security decisions.
/// Start from `ToolAnnotations::default()` and set what applies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches entities outside the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }

    /// Sets the display name (`title`).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `readOnlyHint`: the tool does not change its environment.
    pub fn with_read_only_hint(mut self, read_only_hint: bool) -> Self {
        self.read_only_hint = Some(read_only_hint);
        self
    }

    /// Sets `destructiveHint`: the tool may destroy data.
    pub fn with_destructive_hint(mut self, destructive_hint: bool) -> Self {
        self.destructive_hint = Some(destructive_hint);
        self
    }

    /// Sets `idempotentHint`: calling it twice with the same arguments has
    /// no further effect.
    pub fn with_idempotent_hint(mut self, idempotent_hint: bool) -> Self {
        self.idempotent_hint = Some(idempotent_hint);
        self
    }

    /// Sets `openWorldHint`: the tool reaches entities outside the server.
    pub fn with_open_world_hint(mut self, open_world_hint: bool) -> Self {
        self.open_world_hint = Some(open_world_hint);
        self
    }
}

/// A tool as listed by `tools/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Tool {
    /// A tool named `name` whose arguments follow the JSON Schema `input_schema`. `#[tool]`
    /// makes these listings; this is for clients and tests that need one by hand.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let tool = sake::Tool::new("add", json!({"type": "object", "properties": {}}))
    ///     .with_description("Adds two numbers.")
    ///     .with_annotations(sake::ToolAnnotations::default().with_read_only_hint(true));
    /// assert_eq!(
    ///     serde_json::to_value(&tool).unwrap(),
    ///     json!({"name": "add", "description": "Adds two numbers.",
    ///            "inputSchema": {"type": "object", "properties": {}},
    ///            "annotations": {"readOnlyHint": true}})
    /// );
    /// ```
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            icons: None,
            input_schema,
            output_schema: None,
            annotations: None,
            meta: None,
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

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// Sets the JSON Schema of its structured output (`outputSchema`).
    pub fn with_output_schema(mut self, output_schema: Value) -> Self {
        self.output_schema = Some(output_schema);
        self
    }

    /// Sets the behaviour hints.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// An argument of a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// An argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            title: None,
            description: None,
            required: None,
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

    /// Sets whether the argument must be given.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = Some(required);
        self
    }
}

/// A prompt as listed by `prompts/list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Prompt {
    /// A prompt named `name`. `#[prompt]` makes these listings; this is for clients and tests
    /// that need one by hand.
    ///
    /// ```
    /// let prompt = sake::Prompt::new("review")
    ///     .with_arguments([sake::PromptArgument::new("file").with_required(true)]);
    /// assert_eq!(
    ///     serde_json::to_value(&prompt).unwrap(),
    ///     serde_json::json!({"name": "review", "arguments": [{"name": "file", "required": true}]})
    /// );
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
            icons: None,
            meta: None,
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

    /// Sets the arguments.
    pub fn with_arguments(mut self, arguments: impl IntoIterator<Item = PromptArgument>) -> Self {
        self.arguments = Some(arguments.into_iter().collect());
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A resource as listed by `resources/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Optional hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Resource {
    /// The resource at `uri` named `name`. `#[resource]` makes these listings; this is for
    /// clients and tests that need one by hand.
    ///
    /// ```
    /// let resource = sake::Resource::new("file:///notes.txt", "notes")
    ///     .with_mime_type("text/plain")
    ///     .with_size(120);
    /// assert_eq!(
    ///     serde_json::to_value(&resource).unwrap(),
    ///     serde_json::json!({"uri": "file:///notes.txt", "name": "notes",
    ///                        "mimeType": "text/plain", "size": 120})
    /// );
    /// ```
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
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

    /// Sets the MIME type (`mimeType`).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes.
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A resource template as listed by `resources/templates/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The RFC 6570 template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it yields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Optional hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ResourceTemplate {
    /// The RFC 6570 template `uri_template` named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            icons: None,
            annotations: None,
            meta: None,
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

    /// Sets the MIME type of what it yields (`mimeType`).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// The severity of a log message, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Information.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "debug" => LoggingLevel::Debug,
            "info" => LoggingLevel::Info,
            "notice" => LoggingLevel::Notice,
            "warning" => LoggingLevel::Warning,
            "error" => LoggingLevel::Error,
            "critical" => LoggingLevel::Critical,
            "alert" => LoggingLevel::Alert,
            "emergency" => LoggingLevel::Emergency,
            _ => return None,
        })
    }
}

impl fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `roots` client capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RootsCapability {
    /// The client sends `notifications/roots/list_changed` (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

impl RootsCapability {
    /// Sets `listChanged`: the client sends `notifications/roots/list_changed`.
    pub fn with_list_changed(mut self, list_changed: bool) -> Self {
        self.list_changed = Some(list_changed);
        self
    }
}

/// The `sampling` client capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingCapability {
    /// The client honours `includeContext`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// The client accepts `tools` and `toolChoice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
}

impl SamplingCapability {
    /// Sets `context`: the client honours `includeContext`.
    pub fn with_context(mut self, context: JsonObject) -> Self {
        self.context = Some(context);
        self
    }

    /// Sets `tools`: the client accepts `tools` and `toolChoice`.
    pub fn with_tools(mut self, tools: JsonObject) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// The `elicitation` client capability. `{}` means form mode only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
}

impl ElicitationCapability {
    /// Whether form mode is allowed (`{}` implies it).
    pub fn allows_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is allowed.
    pub fn allows_url(&self) -> bool {
        self.url.is_some()
    }

    /// Allows form mode.
    pub fn with_form(mut self, form: JsonObject) -> Self {
        self.form = Some(form);
        self
    }

    /// Allows URL mode.
    pub fn with_url(mut self, url: JsonObject) -> Self {
        self.url = Some(url);
        self
    }
}

/// What a client can do, as declared in `initialize` or in each request's `_meta`. Start
/// from `ClientCapabilities::default()` (nothing declared) and add what is offered:
///
/// ```
/// use sake::{ClientCapabilities, ElicitationCapability, SamplingCapability};
///
/// let caps = ClientCapabilities::default()
///     .with_sampling(SamplingCapability::default())
///     .with_elicitation(ElicitationCapability::default().with_form(Default::default()));
/// assert_eq!(
///     serde_json::to_value(&caps).unwrap(),
///     serde_json::json!({"sampling": {}, "elicitation": {"form": {}}})
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// Roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Extensions (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Tasks (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<JsonObject>,
}

impl ClientCapabilities {
    /// Declares roots.
    pub fn with_roots(mut self, roots: RootsCapability) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Declares sampling.
    pub fn with_sampling(mut self, sampling: SamplingCapability) -> Self {
        self.sampling = Some(sampling);
        self
    }

    /// Declares elicitation.
    pub fn with_elicitation(mut self, elicitation: ElicitationCapability) -> Self {
        self.elicitation = Some(elicitation);
        self
    }

    /// Declares experimental, non-standard capabilities.
    pub fn with_experimental(mut self, experimental: JsonObject) -> Self {
        self.experimental = Some(experimental);
        self
    }

    /// Declares extensions (2026-07-28).
    pub fn with_extensions(mut self, extensions: JsonObject) -> Self {
        self.extensions = Some(extensions);
        self
    }

    /// Declares tasks (2025-11-25).
    pub fn with_tasks(mut self, tasks: JsonObject) -> Self {
        self.tasks = Some(tasks);
        self
    }
}

/// The `prompts`, `tools` capability body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListChangedCapability {
    /// The server notifies list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

impl ListChangedCapability {
    /// Sets `listChanged`: the server notifies list changes.
    pub fn with_list_changed(mut self, list_changed: bool) -> Self {
        self.list_changed = Some(list_changed);
        self
    }
}

/// The `resources` capability body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcesCapability {
    /// The server supports subscriptions to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server notifies list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

impl ResourcesCapability {
    /// Sets `subscribe`: the server supports subscriptions to resource updates.
    pub fn with_subscribe(mut self, subscribe: bool) -> Self {
        self.subscribe = Some(subscribe);
        self
    }

    /// Sets `listChanged`: the server notifies list changes.
    pub fn with_list_changed(mut self, list_changed: bool) -> Self {
        self.list_changed = Some(list_changed);
        self
    }
}

/// What a server can do. Start from `ServerCapabilities::default()` (nothing declared) and
/// add what is offered:
///
/// ```
/// use sake::{ListChangedCapability, ServerCapabilities};
///
/// let caps = ServerCapabilities::default()
///     .with_tools(ListChangedCapability::default().with_list_changed(true))
///     .with_logging(Default::default());
/// assert_eq!(
///     serde_json::to_value(&caps).unwrap(),
///     serde_json::json!({"logging": {}, "tools": {"listChanged": true}})
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Extensions (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

impl ServerCapabilities {
    /// Declares experimental, non-standard capabilities.
    pub fn with_experimental(mut self, experimental: JsonObject) -> Self {
        self.experimental = Some(experimental);
        self
    }

    /// Declares log messages.
    pub fn with_logging(mut self, logging: JsonObject) -> Self {
        self.logging = Some(logging);
        self
    }

    /// Declares `completion/complete`.
    pub fn with_completions(mut self, completions: JsonObject) -> Self {
        self.completions = Some(completions);
        self
    }

    /// Declares prompts.
    pub fn with_prompts(mut self, prompts: ListChangedCapability) -> Self {
        self.prompts = Some(prompts);
        self
    }

    /// Declares resources.
    pub fn with_resources(mut self, resources: ResourcesCapability) -> Self {
        self.resources = Some(resources);
        self
    }

    /// Declares tools.
    pub fn with_tools(mut self, tools: ListChangedCapability) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Declares extensions (2026-07-28).
    pub fn with_extensions(mut self, extensions: JsonObject) -> Self {
        self.extensions = Some(extensions);
        self
    }
}

/// A root the client exposes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Root {
    /// The root at `uri` (a `file://` URI).
    ///
    /// ```
    /// let root = sake::Root::new("file:///home/me/project").with_name("project");
    /// assert_eq!(
    ///     serde_json::to_value(&root).unwrap(),
    ///     serde_json::json!({"uri": "file:///home/me/project", "name": "project"})
    /// );
    /// ```
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
            meta: None,
        }
    }

    /// Sets the display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// The answer to `roots/list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

impl ListRootsResult {
    /// An answer listing these roots.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult { roots }
    }
}

/// A message of a sampling request or result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said: a content block, or an array of them.
    pub content: Value,
}

impl SamplingMessage {
    /// A message from `role`; `content` is a content block (`{"type": "text", …}`) or an
    /// array of them.
    pub fn new(role: Role, content: Value) -> Self {
        SamplingMessage { role, content }
    }

    /// A text message from the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage::new(
            Role::User,
            serde_json::json!({"type": "text", "text": text.into()}),
        )
    }

    /// A text message from the assistant (an earlier answer in the conversation).
    pub fn assistant_text(text: impl Into<String>) -> Self {
        SamplingMessage::new(
            Role::Assistant,
            serde_json::json!({"type": "text", "text": text.into()}),
        )
    }
}

/// The parameters of `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageRequest {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to sample.
    pub max_tokens: u32,
    /// A system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Model preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<Value>,
    /// `"none"`, `"thisServer"` or `"allServers"` (deprecated values but the last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Provider metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use (needs the `sampling.tools` capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// Tool choice (needs the `sampling.tools` capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

impl CreateMessageRequest {
    /// A request to sample at most `max_tokens` tokens after `messages`;
    /// [`CreateMessageRequest::user`] makes one of a single user message.
    ///
    /// ```
    /// use sake::prelude::*;
    ///
    /// let request = CreateMessageRequest::new(
    ///     vec![
    ///         SamplingMessage::user_text("What is the capital of France?"),
    ///         SamplingMessage::assistant_text("Paris."),
    ///         SamplingMessage::user_text("And of Italy?"),
    ///     ],
    ///     100,
    /// )
    /// .with_system_prompt("Answer in one word.")
    /// .with_temperature(0.0);
    /// assert_eq!(request.messages.len(), 3);
    /// ```
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> Self {
        CreateMessageRequest {
            messages,
            max_tokens,
            system_prompt: None,
            temperature: None,
            stop_sequences: None,
            model_preferences: None,
            include_context: None,
            metadata: None,
            tools: None,
            tool_choice: None,
        }
    }

    /// One user message asking `text`, with a token limit.
    pub fn user(text: impl Into<String>, max_tokens: u32) -> Self {
        CreateMessageRequest::new(vec![SamplingMessage::user_text(text)], max_tokens)
    }

    /// Sets the system prompt (`systemPrompt`).
    pub fn with_system_prompt(mut self, system_prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(system_prompt.into());
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the stop sequences (`stopSequences`).
    pub fn with_stop_sequences(
        mut self,
        stop_sequences: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.stop_sequences = Some(stop_sequences.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the model preferences (`modelPreferences`).
    pub fn with_model_preferences(mut self, model_preferences: Value) -> Self {
        self.model_preferences = Some(model_preferences);
        self
    }

    /// Sets `includeContext`: `"none"`, `"thisServer"` or `"allServers"`.
    pub fn with_include_context(mut self, include_context: impl Into<String>) -> Self {
        self.include_context = Some(include_context.into());
        self
    }

    /// Sets the provider metadata.
    pub fn with_metadata(mut self, metadata: JsonObject) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Sets the tools the model may use (needs the `sampling.tools` capability).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Value>) -> Self {
        self.tools = Some(tools.into_iter().collect());
        self
    }

    /// Sets the tool choice (needs the `sampling.tools` capability).
    pub fn with_tool_choice(mut self, tool_choice: Value) -> Self {
        self.tool_choice = Some(tool_choice);
        self
    }
}

/// The answer to `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageResult {
    /// Who speaks (the assistant).
    pub role: Role,
    /// A content block, or an array of them.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why sampling stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl CreateMessageResult {
    /// What `model` answered as `role` (the assistant); `content` is a content block or an
    /// array of them. This is what a client's sampling handler returns.
    ///
    /// ```
    /// use sake::prelude::*;
    /// use serde_json::json;
    ///
    /// let result = CreateMessageResult::new(
    ///     Role::Assistant,
    ///     json!({"type": "text", "text": "Paris"}),
    ///     "example-model",
    /// )
    /// .with_stop_reason("endTurn");
    /// assert_eq!(result.text(), Some("Paris"));
    /// ```
    pub fn new(role: Role, content: Value, model: impl Into<String>) -> Self {
        CreateMessageResult {
            role,
            content,
            model: model.into(),
            stop_reason: None,
        }
    }

    /// The text of the answer, when it is one text block or starts with one.
    pub fn text(&self) -> Option<&str> {
        let block = match &self.content {
            Value::Array(items) => items.first()?,
            other => other,
        };
        block.get("text")?.as_str()
    }

    /// Sets why sampling stopped (`stopReason`), such as `"endTurn"`.
    pub fn with_stop_reason(mut self, stop_reason: impl Into<String>) -> Self {
        self.stop_reason = Some(stop_reason.into());
        self
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted.
    Accept,
    /// Declined.
    Decline,
    /// Dismissed.
    Cancel,
}

impl fmt::Display for ElicitAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        })
    }
}

/// The raw answer to `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values (form mode, `accept` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
}

/// The parameters of `elicitation/create`: a form (a flat object schema) or a URL to open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ElicitRequest {
    /// `"form"` (the default when absent) or `"url"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to ask.
    pub message: String,
    /// The form's schema: an object of primitive properties (form mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// The URL to open (URL mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The elicitation's id (URL mode, 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl ElicitRequest {
    /// A form-mode request: ask `message`, with a form of `requested_schema` (an object
    /// schema of primitive properties). `mode` stays absent, which means form.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let request = sake::ElicitRequest::form(
    ///     "Your name?",
    ///     json!({"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}),
    /// );
    /// assert!(!request.is_url());
    /// assert_eq!(request.defaults()["name"], "Ada");
    /// ```
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        ElicitRequest {
            mode: None,
            message: message.into(),
            requested_schema: Some(requested_schema),
            url: None,
            elicitation_id: None,
            meta: None,
        }
    }

    /// A URL-mode request: ask the user to open `url`, saying `message`. On 2025-11-25 the
    /// request also carries an [`elicitation_id`](ElicitRequest::with_elicitation_id).
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequest {
            mode: Some("url".to_owned()),
            message: message.into(),
            requested_schema: None,
            url: Some(url.into()),
            elicitation_id: None,
            meta: None,
        }
    }

    /// Whether this asks the user to open a URL rather than fill a form.
    pub fn is_url(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }

    /// The `default` of every property of the form's schema that declares one.
    pub fn defaults(&self) -> JsonObject {
        let mut out = JsonObject::new();
        if let Some(props) = self
            .requested_schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
        {
            for (name, schema) in props {
                if let Some(default) = schema.get("default") {
                    out.insert(name.clone(), default.clone());
                }
            }
        }
        out
    }

    /// Sets the elicitation's id (`elicitationId`, URL mode, 2025-11-25).
    pub fn with_elicitation_id(mut self, elicitation_id: impl Into<String>) -> Self {
        self.elicitation_id = Some(elicitation_id.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

impl ElicitResult {
    /// An answer with `action` and no content; [`ElicitResult::accept`],
    /// [`ElicitResult::decline`] and [`ElicitResult::cancel`] name each action.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
        }
    }

    /// The user submitted `content`.
    pub fn accept(content: JsonObject) -> Self {
        ElicitResult::new(ElicitAction::Accept).with_content(content)
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitResult::new(ElicitAction::Decline)
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        ElicitResult::new(ElicitAction::Cancel)
    }

    /// Sets the submitted values.
    pub fn with_content(mut self, content: JsonObject) -> Self {
        self.content = Some(content);
        self
    }
}

/// What `completion/complete` completes: a prompt's argument or a resource template's variable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// `{"type":"ref/prompt","name":…}`
    #[serde(rename = "ref/prompt")]
    #[non_exhaustive]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `{"type":"ref/resource","uri":…}` (the template's URI)
    #[serde(rename = "ref/resource")]
    #[non_exhaustive]
    Resource {
        /// The resource template.
        uri: String,
    },
}

impl CompletionReference {
    /// A prompt's argument.
    pub fn prompt(name: impl Into<String>) -> Self {
        CompletionReference::Prompt { name: name.into() }
    }

    /// A resource template's variable.
    pub fn resource(uri: impl Into<String>) -> Self {
        CompletionReference::Resource { uri: uri.into() }
    }
}

/// The result of `server/discover` (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// Every revision the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// How to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Freshness of the answer, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `"public"` or `"private"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// Extra metadata; `io.modelcontextprotocol/serverInfo` names the server.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl DiscoverResult {
    /// A server that speaks `supported_versions` and offers `capabilities`.
    pub fn new(
        supported_versions: impl IntoIterator<Item = impl Into<String>>,
        capabilities: ServerCapabilities,
    ) -> Self {
        DiscoverResult {
            supported_versions: supported_versions.into_iter().map(Into::into).collect(),
            capabilities,
            instructions: None,
            ttl_ms: None,
            cache_scope: None,
            meta: None,
        }
    }

    /// Sets how to use the server.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the freshness of the answer, in milliseconds (`ttlMs`).
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets `cacheScope`: `"public"` or `"private"`.
    pub fn with_cache_scope(mut self, cache_scope: impl Into<String>) -> Self {
        self.cache_scope = Some(cache_scope.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// The result of `initialize` (handshake revisions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: Implementation,
    /// How to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl InitializeResult {
    /// The server `server_info` chose `protocol_version` and offers `capabilities`.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        InitializeResult {
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            instructions: None,
        }
    }

    /// Sets how to use the server.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}

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
