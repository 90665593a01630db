//! The results of the server's methods (`tools/call`, `prompts/get`, `resources/read`,
//! `completion/complete`) and what a completion refers to.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::*;

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
