//! What a client and a server declare (capabilities, the logging level), and the results that
//! carry them: `server/discover` (2026-07-28) and `initialize` (the handshake revisions).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::*;

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
