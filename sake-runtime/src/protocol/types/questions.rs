//! What the server asks a client: its roots, a sampling (`sampling/createMessage`), an
//! elicitation, and their results.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::*;

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
