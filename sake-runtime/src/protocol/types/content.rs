//! Content: what a tool result, a prompt message or a sampling message carries (text, images and
//! audio, resource links, embedded resources), and the contents of a resource.

use serde::{Deserialize, Serialize};

use super::*;

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
