//! An independent MCP server for sake's client tests: the official Rust SDK (`rmcp` 3.11),
//! over Streamable HTTP in its stateless (2026-07-28) and session (handshake) modes, and over
//! stdio (`src/bin/rmcp_server.rs`).
//!
//! Tools: `add(a, b)`, `echo(text)`, `ask_name()` (elicitation: an `input_required` round on
//! 2026-07-28, a server-to-client request on the handshake revisions), `fail()` (a tool
//! error). Resource `mem://hello`; prompt `greet(name)`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequest, InputRequests, InputRequiredResult, ListPromptsResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    pub text: String,
}

/// The test server.
#[derive(Clone)]
#[allow(missing_debug_implementations)] // rmcp's ToolRouter has no Debug.
pub struct Demo {
    tool_router: ToolRouter<Demo>,
}

impl Default for Demo {
    fn default() -> Self {
        Demo::new()
    }
}

fn name_elicitation() -> Result<ElicitRequestParams, ErrorData> {
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "What is your name?".into(),
        requested_schema: ElicitationSchema::builder()
            .required_string("name")
            .build()
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
    })
}

#[tool_router]
impl Demo {
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Add two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Echo the text back")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Always fails")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("it failed")])
    }

    #[tool(description = "Ask the user for their name via elicitation")]
    async fn ask_name(
        &self,
        ctx: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if modern {
            match responses.as_ref().and_then(|r| r.get("name")) {
                None => {
                    let mut reqs = InputRequests::new();
                    reqs.insert(
                        "name".to_string(),
                        InputRequest::Elicitation(ElicitRequest::new(name_elicitation()?)),
                    );
                    Ok(InputRequiredResult::new(Some(reqs), Some("asked-name".into())).into())
                }
                Some(answer) => {
                    let name = answer["content"]["name"].as_str().unwrap_or("?");
                    Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                        "Hello, {name}! (state={})",
                        state.as_deref().unwrap_or("none")
                    ))])
                    .into())
                }
            }
        } else {
            let result = ctx
                .peer
                .create_elicitation(name_elicitation()?)
                .await
                .map_err(|e| ErrorData::internal_error(format!("elicitation failed: {e}"), None))?;
            let name = match (result.action, result.content) {
                (ElicitationAction::Accept, Some(c)) => {
                    c["name"].as_str().unwrap_or("?").to_string()
                }
                (action, _) => format!("<{action:?}>"),
            };
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "Hello, {name}! (legacy)"
            ))])
            .into())
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("mem://hello", "hello").with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "mem://hello" {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text("hello world", "mem://hello")])
                .into(),
        )
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "greet",
            Some("Greet someone"),
            Some(vec![PromptArgument::new("name").with_required(true)]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "greet" {
            return Err(ErrorData::invalid_params("unknown prompt", None));
        }
        let name = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(|v| v.as_str())
            .unwrap_or("world");
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Please greet {name}."),
        )])
        .into())
    }
}

/// The server mounted at `/mcp`: stateless 2026-07-28 (`stateless`), or handshake sessions
/// (which rmcp also serves 2026-07-28 requests on).
pub fn router(stateless: bool) -> axum::Router {
    if stateless {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None);
        let svc: StreamableHttpService<Demo, NeverSessionManager> = StreamableHttpService::new(
            || Ok(Demo::new()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        axum::Router::new().nest_service("/mcp", svc)
    } else {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(true)
            .with_sse_keep_alive(Some(Duration::from_secs(15)));
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(Duration::from_secs(300));
        let svc: StreamableHttpService<Demo, LocalSessionManager> =
            StreamableHttpService::new(|| Ok(Demo::new()), Arc::new(sessions), config);
        axum::Router::new().nest_service("/mcp", svc)
    }
}

/// Serves the router on a free loopback port; returns the endpoint URL.
pub async fn serve(router: axum::Router) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(format!("http://{addr}/mcp"))
}

/// Serves the test server on stdin/stdout until stdin closes.
pub async fn serve_stdio() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let running = Demo::new().serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
