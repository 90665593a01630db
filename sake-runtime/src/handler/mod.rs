//! The glue between the macros' generated code and the runtime: the descriptors each
//! annotated function submits to the registry, and the conversions of its return value.
//!
//! Users never name these; generated code reaches them through `::sake::__private`.

pub mod apps;
pub mod context;
pub mod events;
pub mod input;
pub mod segment;
pub mod state;

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

pub use self::apps::{
    CspDef, HtmlFn, IntoHtml, ToolUiDef, View, ViewDef, ViewFn, ViewHtml, view_html,
};
use self::context::Context;
use self::state::State;
pub use self::state::StateNeed;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::types::{
    CallToolResult, Completion, Content, GetPromptResult, PromptMessage, ReadResourceResult,
    ResourceContents,
};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Boxes the future `make` makes, written straight into the allocation: the box is allocated
/// before `make` runs, where `Box::pin(make())` makes the future on the stack and copies all of
/// it over (for a request's large future, tens of cache lines read and written per request).
#[inline(always)]
pub(crate) fn boxed_in_place<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

/// Where an annotated function is defined, for start-up errors.
#[derive(Clone, Copy, Debug)]
pub struct Location {
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
    /// `module_path!()`.
    pub module: &'static str,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} ({})", self.file, self.line, self.module)
    }
}

/// An icon declared in an attribute.
#[derive(Clone, Copy, Debug)]
pub struct IconDef {
    /// `src`.
    pub src: &'static str,
    /// `mime_type`.
    pub mime_type: Option<&'static str>,
    /// `sizes`.
    pub sizes: &'static [&'static str],
    /// `theme`.
    pub theme: Option<&'static str>,
}

/// `annotations(...)` of a tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct ToolHints {
    /// `title`.
    pub title: Option<&'static str>,
    /// `read_only`.
    pub read_only: Option<bool>,
    /// `destructive`.
    pub destructive: Option<bool>,
    /// `idempotent`.
    pub idempotent: Option<bool>,
    /// `open_world`.
    pub open_world: Option<bool>,
}

/// The future of one tool call.
pub type ToolFuture = BoxFuture<CallToolResult>;

/// Whether a call of a tool may become a task (`#[tool(task = "...")]`; the tasks extension
/// `io.modelcontextprotocol/tasks` of 2026-07-28, see docs/tasks.md). The server's policy: it
/// is not on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task (`"forbidden"`, the default).
    #[default]
    Forbidden,
    /// A task when the request declares the extension and the function waits; otherwise
    /// served within the call (`"optional"`).
    Optional,
    /// Only a task (`"required"`): a request that does not declare the extension gets
    /// -32021, and revisions without the extension neither list nor serve the tool.
    Required,
}

/// A tool, as `#[tool]` registers it.
#[derive(Debug)]
pub struct ToolDef {
    /// The tool's name.
    pub name: &'static str,
    /// Display name.
    pub title: Option<&'static str>,
    /// The doc comment.
    pub description: &'static str,
    /// Behaviour hints.
    pub hints: ToolHints,
    /// Icons.
    pub icons: &'static [IconDef],
    /// Builds the input schema.
    pub input_schema: fn() -> Value,
    /// Builds the output schema, for tools with structured output.
    pub output_schema: fn() -> Option<Value>,
    /// Decodes the arguments and starts the call.
    pub call: fn(Option<&RawValue>, Context) -> ToolFuture,
    /// The `State<T>` types it takes.
    pub states: fn() -> Vec<StateNeed>,
    /// Client capabilities the tool cannot run without (`requires(sampling)`): checked
    /// before it runs. Names: `sampling`, `sampling.tools`, `elicitation`, `elicitation.url`,
    /// `roots`.
    pub requires: &'static [&'static str],
    /// The OAuth scopes a caller needs (`scopes("files:read")`), to be checked before the
    /// function runs; empty: none.
    pub scopes: &'static [&'static str],
    /// Whether it takes the caller's `Principal` (feature `auth`): it then runs only for a
    /// signed-in caller, and an anonymous one gets the `401` challenge.
    pub principal: bool,
    /// Whether it may run as a task (`task = "optional"`).
    pub task_support: TaskSupport,
    /// Whether the function takes the [`Context`]: only such a function can ask the client
    /// for input or see its call cancelled, so a call of one that does not builds neither an
    /// input round nor a cancellation token.
    pub context: bool,
    /// Its MCP Apps view and who may call it (`ui = …`, `visibility(…)`);
    /// [`ToolUiDef::NONE`] for a tool without.
    pub ui: ToolUiDef,
    /// Where it is defined.
    pub location: Location,
}

/// The future of one prompt.
pub type PromptFuture = BoxFuture<Result<GetPromptResult, RpcError>>;

/// A completion handler: `async fn(CompletionRequest) -> impl Into<Completion>`.
pub type CompleteFn = fn(CompletionRequest) -> BoxFuture<Completion>;

/// What a client asks to complete.
///
/// `#[non_exhaustive]`: the spec adds to what a completion request carries; in a unit test,
/// make one with [`CompletionRequest::new`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument (prompt) or variable (resource template) being completed.
    pub argument: String,
    /// What the user has typed so far.
    pub value: String,
    /// Values of other arguments already resolved (2025-06-18 and later).
    pub context: std::collections::BTreeMap<String, String>,
    /// The signed-in caller, on a server that checks tokens (feature `auth`); `None` for an
    /// anonymous one. A completion runs only for a caller who may use its prompt or template
    /// (its `scopes`, and a signed-in caller when it takes a `Principal`).
    #[cfg(feature = "auth")]
    pub principal: Option<crate::auth::Principal>,
}

impl CompletionRequest {
    /// A request to complete `argument`, typed so far as `value`, with no context and no
    /// caller.
    pub fn new(argument: impl Into<String>, value: impl Into<String>) -> Self {
        CompletionRequest {
            argument: argument.into(),
            value: value.into(),
            context: std::collections::BTreeMap::new(),
            #[cfg(feature = "auth")]
            principal: None,
        }
    }

    /// With the values of other arguments already resolved.
    pub fn with_context(mut self, context: std::collections::BTreeMap<String, String>) -> Self {
        self.context = context;
        self
    }

    /// With the caller (feature `auth`).
    #[cfg(feature = "auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
    pub fn with_principal(mut self, principal: crate::auth::Principal) -> Self {
        self.principal = Some(principal);
        self
    }
}

/// Adapts an async completion function to a [`CompleteFn`] body.
pub fn complete_with<F, Fut, R>(f: F, req: CompletionRequest) -> BoxFuture<Completion>
where
    F: FnOnce(CompletionRequest) -> Fut,
    Fut: Future<Output = R> + Send + 'static,
    R: Into<Completion>,
{
    let fut = f(req);
    Box::pin(async move { fut.await.into() })
}

/// A prompt, as `#[prompt]` registers it.
#[derive(Debug)]
pub struct PromptDef {
    /// The prompt's name.
    pub name: &'static str,
    /// Display name.
    pub title: Option<&'static str>,
    /// The doc comment.
    pub description: &'static str,
    /// Icons.
    pub icons: &'static [IconDef],
    /// The schema of its arguments: each property is an argument, `required` the required.
    pub arguments: fn() -> Value,
    /// Decodes the arguments and starts rendering the prompt.
    pub get: fn(Option<&RawValue>, Context) -> PromptFuture,
    /// Completes argument values.
    pub complete: Option<CompleteFn>,
    /// The OAuth scopes a caller needs (`scopes("files:read")`), to be checked before the
    /// function runs; empty: none.
    pub scopes: &'static [&'static str],
    /// Whether it takes the caller's `Principal` (feature `auth`): it then runs only for a
    /// signed-in caller, and an anonymous one gets the `401` challenge.
    pub principal: bool,
    /// The `State<T>` types it takes.
    pub states: fn() -> Vec<StateNeed>,
    /// Where it is defined.
    pub location: Location,
}

/// The future of one resource read.
pub type ResourceFuture = BoxFuture<Result<ReadResourceResult, RpcError>>;

/// A read of a resource: the URI asked for and the template variables it bound.
#[derive(Debug)]
pub struct ResourceRequest {
    /// The URI.
    pub uri: String,
    /// The template's variables, percent-decoded, in template order.
    pub vars: Vec<(String, String)>,
}

impl ResourceRequest {
    /// The value of a template variable.
    pub fn var(&self, name: &str) -> &str {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }
}

/// A resource or resource template, as `#[resource]` registers it.
#[derive(Debug)]
pub struct ResourceDef {
    /// The URI, or the RFC 6570 level-1 template.
    pub uri: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Display name.
    pub title: Option<&'static str>,
    /// The doc comment.
    pub description: Option<&'static str>,
    /// The MIME type.
    pub mime_type: Option<&'static str>,
    /// Icons.
    pub icons: &'static [IconDef],
    /// Reads it.
    pub read: fn(ResourceRequest, Context) -> ResourceFuture,
    /// Completes template variables.
    pub complete: Option<CompleteFn>,
    /// The OAuth scopes a caller needs (`scopes("files:read")`), to be checked before the
    /// function runs; empty: none.
    pub scopes: &'static [&'static str],
    /// Whether it takes the caller's `Principal` (feature `auth`): it then runs only for a
    /// signed-in caller, and an anonymous one gets the `401` challenge.
    pub principal: bool,
    /// The `State<T>` types it takes.
    pub states: fn() -> Vec<StateNeed>,
    /// Where it is defined.
    pub location: Location,
}

inventory::collect!(ToolDef);
inventory::collect!(PromptDef);
inventory::collect!(ResourceDef);

// ---------------------------------------------------------------------------------------------
// Arguments

/// What a `#[tool]` argument must be.
///
/// Generated code checks every argument type against this trait at one place, spanned at the
/// parameter's type, so that a type that does not qualify is reported there in these words
/// (and only there: the derives run on a struct generic over the argument types).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[tool] argument: it must implement serde::Deserialize and schemars::JsonSchema",
    label = "this parameter's type needs #[derive(Deserialize, JsonSchema)]",
    note = "arguments are deserialized from the request and described in the tool's input schema; the request context is a parameter of type `Context`"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema {}
// `do_not_recommend`: report `T: ToolArgument` once, not each missing supertrait apart.
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema> ToolArgument for T {}

/// What a `#[prompt]` argument must be (see [`ToolArgument`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[prompt] argument: prompt arguments are strings",
    label = "use `String`, or `Option<String>` for an optional argument"
)]
pub trait PromptArgumentType: DeserializeOwned + JsonSchema {}
impl PromptArgumentType for String {}
impl PromptArgumentType for Option<String> {}

/// What an argument mirrored in an `Mcp-Param-*` header may be (2026-07-28 tools, `x-mcp-header`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be mirrored in a header: `#[arg(header)]` takes strings, integers and booleans",
    label = "use String, an integer type or bool (or an Option of one)"
)]
pub trait HeaderArgument {}
impl HeaderArgument for String {}
impl HeaderArgument for bool {}
impl HeaderArgument for i8 {}
impl HeaderArgument for i16 {}
impl HeaderArgument for i32 {}
impl HeaderArgument for i64 {}
impl HeaderArgument for u8 {}
impl HeaderArgument for u16 {}
impl HeaderArgument for u32 {}
impl HeaderArgument for u64 {}
impl HeaderArgument for isize {}
impl HeaderArgument for usize {}
impl<T: HeaderArgument> HeaderArgument for Option<T> {}

/// Checks a header argument's type (called only by generated code).
pub fn assert_header_argument<T: HeaderArgument>() {}

/// The input schema and the decoder of one argument struct `A`, whose errors are `E`.
///
/// Generated code builds it once, in a `const` generic over the argument types: that is the
/// one place where the argument types must qualify.
#[allow(missing_debug_implementations)] // Compile-time glue, never printed.
pub struct ArgsGlue<A, E> {
    /// Builds the schema of `A`.
    pub schema: fn() -> Value,
    /// Decodes `A` for the named tool or prompt.
    pub decode: fn(&str, Option<&RawValue>) -> Result<A, E>,
}

impl<A: DeserializeOwned + JsonSchema> ArgsGlue<A, CallToolResult> {
    /// A tool's.
    pub const TOOL: Self = ArgsGlue {
        schema: crate::schema::input_schema::<A>,
        decode: decode_tool_args::<A>,
    };
}

impl<A: DeserializeOwned + JsonSchema> ArgsGlue<A, RpcError> {
    /// A prompt's.
    pub const PROMPT: Self = ArgsGlue {
        schema: crate::schema::input_schema::<A>,
        decode: decode_prompt_args::<A>,
    };
}

/// Decodes a tool's arguments into its generated argument struct. A missing or `null`
/// `arguments` reads as `{}`; a failure names the field and becomes an `isError` result.
pub fn decode_tool_args<A: DeserializeOwned>(
    tool: &str,
    raw: Option<&RawValue>,
) -> Result<A, CallToolResult> {
    decode_args(format_args!("tool `{tool}`"), "", raw).map_err(CallToolResult::error)
}

/// Decodes a function's arguments (a tool's or a prompt's) into its generated argument
/// struct: a missing or `null` `arguments` reads as `{}`. A failure is the message naming the
/// function (`what`) and the field, with `field_hint` after a field's error.
fn decode_args<A: DeserializeOwned>(
    what: std::fmt::Arguments<'_>,
    field_hint: &str,
    raw: Option<&RawValue>,
) -> Result<A, String> {
    let json = raw
        .map(RawValue::get)
        .filter(|s| *s != "null")
        .unwrap_or("{}");
    // Valid arguments decode without tracking the path (which allocates per field); only a
    // failure is decoded again, to name the field.
    if let Ok(args) = serde_json::from_str(json) {
        return Ok(args);
    }
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            format!("Invalid arguments for {what}: {}", strip_position(&inner))
        } else {
            format!(
                "Invalid arguments for {what}: `{path}`: {}{field_hint}",
                strip_position(&inner)
            )
        }
    })
}

/// The error for a `State<T>` that is not registered (start-up checks make it unreachable).
pub fn missing_state(type_name: &str) -> RpcError {
    RpcError::internal(format!(
        "no state of type {type_name} is registered on this server"
    ))
}

/// The type of a `State<..>` parameter of an annotated function: implemented by [`State<T>`]
/// alone, so that another type named `State` (axum's extractor, say) is a clear compile
/// error rather than a type mismatch. Not a public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `sake::State<T>`",
    label = "a parameter whose type is named `State<..>` receives application state",
    note = "use `sake::State<T>` for a value registered with `Server::state`, or mark the parameter `#[arg]` to make it an argument the client sends"
)]
pub trait StateParam: Sized {
    /// The state this parameter needs, for the start-up check.
    fn need() -> StateNeed;
    /// The value, from the request's context; `None` when it was never registered.
    fn from_context(ctx: &Context) -> Option<Self>;
}

impl<T: Send + Sync + 'static> StateParam for State<T> {
    fn need() -> StateNeed {
        StateNeed::of::<T>()
    }

    fn from_context(ctx: &Context) -> Option<Self> {
        ctx.state::<T>()
    }
}

/// The type of a parameter that takes the caller: `sake::auth::Principal` (the function runs
/// only for a signed-in caller) or `Option<Principal>`. Not a public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `sake::auth::Principal`",
    label = "a parameter named by the type `Principal` takes the caller",
    note = "the caller's principal needs sake's `auth` feature; to take an argument of a type of your own named `Principal`, mark the parameter with #[arg]"
)]
pub trait PrincipalParam: Sized {
    /// The value, from the request's context; `None` for a required principal an anonymous
    /// caller cannot give.
    fn from_context(ctx: &Context) -> Option<Self>;
}

#[cfg(feature = "auth")]
impl PrincipalParam for crate::auth::Principal {
    fn from_context(ctx: &Context) -> Option<Self> {
        ctx.principal().cloned()
    }
}

#[cfg(feature = "auth")]
impl PrincipalParam for Option<crate::auth::Principal> {
    fn from_context(ctx: &Context) -> Option<Self> {
        Some(ctx.principal().cloned())
    }
}

/// The error of a function that takes a `Principal` run without one (the dispatcher refuses
/// anonymous callers before; this is the fallback).
pub fn missing_principal() -> RpcError {
    RpcError::internal("this function needs a signed-in caller, and the request has none")
}

/// A future that resolves at once to an internal error as a tool result.
pub fn ready_tool_internal(err: RpcError) -> ToolFuture {
    ready_tool(CallToolResult::error(err.message))
}

/// A future that resolves at once to `result` (argument errors and other early exits).
pub fn ready_tool(result: CallToolResult) -> ToolFuture {
    Box::pin(std::future::ready(result))
}

/// Decodes a prompt's arguments (strings) into its generated argument struct.
pub fn decode_prompt_args<A: DeserializeOwned>(
    prompt: &str,
    raw: Option<&RawValue>,
) -> Result<A, RpcError> {
    decode_args(
        format_args!("prompt `{prompt}`"),
        " (prompt arguments are strings)",
        raw,
    )
    .map_err(RpcError::invalid_params)
}

/// A future that resolves at once to an error.
pub fn ready_prompt_error(err: RpcError) -> PromptFuture {
    Box::pin(std::future::ready(Err(err)))
}

/// What the type of a `#[resource]` parameter (a URI template variable) must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a URI template variable: it must implement FromStr, with an error that is Display",
    label = "a template variable is parsed from the URI: use String, a number, or a type that implements FromStr"
)]
pub trait UriVariable: FromStr<Err: Display> {}
#[diagnostic::do_not_recommend]
impl<T: FromStr<Err: Display>> UriVariable for T {}

/// Parses a template variable into a parameter's type.
pub fn parse_var<T: UriVariable>(name: &str, value: &str) -> Result<T, RpcError> {
    value.parse::<T>().map_err(|e| {
        RpcError::invalid_params(format!(
            "Invalid URI: variable `{name}` = {value:?} is not a valid {}: {e}",
            short_type_name::<T>()
        ))
    })
}

/// A future that resolves at once to an error.
pub fn ready_resource_error(err: RpcError) -> ResourceFuture {
    Box::pin(std::future::ready(Err(err)))
}

fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

/// serde_json appends " at line 1 column 9"; on one-line arguments it helps nobody.
/// A serde error's message without its " at line L column C" suffix, which points into a
/// fragment the client never saw as a document.
pub(crate) fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

// ---------------------------------------------------------------------------------------------
// Tool return values
//
// A tool may return content (`String`, `Content`, `Vec<Content>`, `CallToolResult`, `()`),
// structured data (any `T: Serialize + JsonSchema`), or a `Result` of either with an error that
// is `Display`. The generated code picks the conversion with autoref-based dispatch on a probe
// of the declared return type: the first of these that applies wins.
//   level 3  &&&Probe<T>            T: IntoCallToolResult           content
//   level 2  &&Probe<Result<T, E>>  T: Serialize + JsonSchema       structured, E → isError
//   level 1  &Probe<T>              T: Serialize + JsonSchema       structured
//   level 0  Probe<T>               any T                           an error: `convert` requires
//                                                                    IntoCallToolResult, whose
//                                                                    message says what to return

/// Return types that are content, not structured data.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a #[tool] function",
    label = "return content (String, Content, Vec<Content>, CallToolResult), a `Serialize + JsonSchema` value, or a Result of either"
)]
pub trait IntoCallToolResult {
    /// Converts into a result.
    fn into_call_tool_result(self) -> CallToolResult;
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoCallToolResult for &'static str {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![Content::text(self)])
    }
}

impl IntoCallToolResult for Content {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![self])
    }
}

impl IntoCallToolResult for Vec<Content> {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::success(self)
    }
}

impl IntoCallToolResult for () {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::success(Vec::new())
    }
}

impl<T: IntoCallToolResult, E: Display> IntoCallToolResult for Result<T, E> {
    fn into_call_tool_result(self) -> CallToolResult {
        match self {
            Ok(v) => v.into_call_tool_result(),
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }
}

/// Probes a return type for its conversion (see the module comment).
#[allow(missing_debug_implementations)] // Compile-time glue, never printed.
pub struct Probe<T: ?Sized>(PhantomData<T>);

// Level 0 takes the probe by value through three dereferences: it must be `Copy`.
impl<T: ?Sized> Clone for Probe<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ?Sized> Copy for Probe<T> {}

impl<T: ?Sized> Probe<T> {
    /// The probe.
    pub const NEW: Self = Probe(PhantomData);
}

/// The conversion of content return types.
#[allow(missing_debug_implementations)] // Compile-time glue, never printed.
pub struct ContentKind<T>(PhantomData<T>);
/// The conversion of `Result<T: Serialize + JsonSchema, E: Display>`.
#[allow(missing_debug_implementations)] // Compile-time glue, never printed.
pub struct ResultStructuredKind<T, E>(PhantomData<(T, E)>);
/// The conversion of `T: Serialize + JsonSchema`.
#[allow(missing_debug_implementations)] // Compile-time glue, never printed.
pub struct StructuredKind<T>(PhantomData<T>);

/// Level 3.
pub trait ViaContent<T>: Sized {
    /// The conversion.
    fn sake_output_kind(self) -> ContentKind<T> {
        ContentKind(PhantomData)
    }
}
impl<T: IntoCallToolResult> ViaContent<T> for &&&Probe<T> {}

/// Level 2.
pub trait ViaResultStructured<T, E>: Sized {
    /// The conversion.
    fn sake_output_kind(self) -> ResultStructuredKind<T, E> {
        ResultStructuredKind(PhantomData)
    }
}
impl<T: Serialize + JsonSchema, E: Display> ViaResultStructured<T, E> for &&Probe<Result<T, E>> {}

/// Level 1.
pub trait ViaStructured<T>: Sized {
    /// The conversion.
    fn sake_output_kind(self) -> StructuredKind<T> {
        StructuredKind(PhantomData)
    }
}
impl<T: Serialize + JsonSchema> ViaStructured<T> for &Probe<T> {}

/// Level 0: no conversion applies. Only `convert` has a bound, so the return type is reported
/// once, in the words of [`IntoCallToolResult`], instead of as an unresolved method.
pub trait ViaNothing<T>: Sized {
    /// The non-conversion.
    fn sake_output_kind(self) -> NoKind<T> {
        NoKind(PhantomData)
    }
}
impl<T> ViaNothing<T> for Probe<T> {}

/// The conversion of a type a tool cannot return (a compile error where it is used).
#[allow(missing_debug_implementations)] // Compile-time glue, never printed.
pub struct NoKind<T>(PhantomData<T>);

impl<T> NoKind<T> {
    /// Reports the return type: it implements none of the conversions.
    pub fn convert(self, value: T) -> CallToolResult
    where
        T: IntoCallToolResult,
    {
        value.into_call_tool_result()
    }
    /// No output schema.
    pub fn output_schema(self) -> Option<Value> {
        None
    }
}

impl<T: IntoCallToolResult> ContentKind<T> {
    /// Converts the value.
    pub fn convert(self, value: T) -> CallToolResult {
        value.into_call_tool_result()
    }
    /// No output schema.
    pub fn output_schema(self) -> Option<Value> {
        None
    }
}

impl<T: Serialize + JsonSchema, E: Display> ResultStructuredKind<T, E> {
    /// Converts the value.
    pub fn convert(self, value: Result<T, E>) -> CallToolResult {
        match value {
            Ok(v) => structured(&v),
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }
    /// `T`'s schema.
    pub fn output_schema(self) -> Option<Value> {
        Some(crate::schema::output_schema::<T>())
    }
}

impl<T: Serialize + JsonSchema> StructuredKind<T> {
    /// Converts the value.
    pub fn convert(self, value: T) -> CallToolResult {
        structured(&value)
    }
    /// `T`'s schema.
    pub fn output_schema(self) -> Option<Value> {
        Some(crate::schema::output_schema::<T>())
    }
}

fn structured<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured(value).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a tool's output could not be serialized");
        CallToolResult::error(format!("The tool's output could not be serialized: {e}"))
    })
}

// ---------------------------------------------------------------------------------------------
// Prompt return values

/// What a `#[prompt]` function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a #[prompt] function",
    label = "return a String, a PromptMessage, a Vec<PromptMessage>, a GetPromptResult, or a Result of one of them"
)]
pub trait IntoGetPromptResult {
    /// Converts into a result.
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError>;
}

impl IntoGetPromptResult for GetPromptResult {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError> {
        Ok(self)
    }
}

impl IntoGetPromptResult for Vec<PromptMessage> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError> {
        Ok(GetPromptResult::new(self))
    }
}

impl IntoGetPromptResult for PromptMessage {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError> {
        vec![self].into_get_prompt_result()
    }
}

impl IntoGetPromptResult for String {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError> {
        PromptMessage::user(self).into_get_prompt_result()
    }
}

impl IntoGetPromptResult for &'static str {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError> {
        PromptMessage::user(self).into_get_prompt_result()
    }
}

impl<T: IntoGetPromptResult, E: Display> IntoGetPromptResult for Result<T, E> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, RpcError> {
        match self {
            Ok(v) => v.into_get_prompt_result(),
            Err(e) => Err(RpcError::internal(e.to_string())),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resource return values

/// An error a `#[resource]` function can return to choose the protocol error.
///
/// Any other error type becomes -32603 (internal error) with its text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// The resource does not exist: -32602 on 2026-07-28, -32002 before, with `data.uri`.
    #[error("Resource not found: {0}")]
    NotFound(String),
    /// The URI is malformed for this resource: -32602.
    #[error("{0}")]
    InvalidUri(String),
}

/// What a `#[resource]` function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a #[resource] function",
    label = "return a String (text), Vec<u8> (a blob), ResourceContents, Vec<ResourceContents>, ReadResourceResult, or a Result of one of them"
)]
pub trait IntoReadResourceResult {
    /// Converts into a result for `uri`, with the resource's declared MIME type.
    fn into_read_resource_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError>;
}

impl IntoReadResourceResult for ReadResourceResult {
    fn into_read_resource_result(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        Ok(self)
    }
}

impl IntoReadResourceResult for Vec<ResourceContents> {
    fn into_read_resource_result(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        Ok(ReadResourceResult::new(self))
    }
}

impl IntoReadResourceResult for ResourceContents {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        vec![self].into_read_resource_result(uri, mime)
    }
}

impl IntoReadResourceResult for String {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        ResourceContents::text(uri, mime, self).into_read_resource_result(uri, mime)
    }
}

impl IntoReadResourceResult for &'static str {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        self.to_owned().into_read_resource_result(uri, mime)
    }
}

impl IntoReadResourceResult for Vec<u8> {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        ResourceContents::blob(uri, mime, self).into_read_resource_result(uri, mime)
    }
}

impl<T: IntoReadResourceResult, E: Display + 'static> IntoReadResourceResult for Result<T, E> {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, RpcError> {
        match self {
            Ok(v) => v.into_read_resource_result(uri, mime),
            Err(e) => Err(resource_error(&e, uri)),
        }
    }
}

fn resource_error<E: Display + 'static>(e: &E, uri: &str) -> RpcError {
    match (e as &dyn std::any::Any).downcast_ref::<ResourceError>() {
        Some(ResourceError::NotFound(_)) => RpcError::resource_not_found(uri),
        Some(ResourceError::InvalidUri(msg)) => {
            RpcError::invalid_params(msg.clone()).with_data(serde_json::json!({ "uri": uri }))
        }
        None => RpcError::internal(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct A {
        a: i64,
        b: Option<String>,
    }

    #[test]
    fn argument_errors_name_the_field() {
        let raw = RawValue::from_string(r#"{"a":"x"}"#.into()).unwrap();
        let e = decode_tool_args::<A>("add", Some(&raw)).unwrap_err();
        assert_eq!(
            e.content[0].as_text().unwrap(),
            "Invalid arguments for tool `add`: `a`: invalid type: string \"x\", expected i64"
        );
        let raw = RawValue::from_string(r#"{}"#.into()).unwrap();
        let e = decode_tool_args::<A>("add", Some(&raw)).unwrap_err();
        assert_eq!(
            e.content[0].as_text().unwrap(),
            "Invalid arguments for tool `add`: missing field `a`"
        );
        assert!(decode_tool_args::<A>("add", None).is_err());
    }

    // The references are the dispatch: clippy sees that `Probe` is `Copy` and calls them needless.
    #[allow(clippy::needless_borrow)]
    #[test]
    fn autoref_dispatch_picks_the_right_conversion() {
        let r = (&&&Probe::<String>::NEW)
            .sake_output_kind()
            .convert("hi".to_owned());
        assert!(r.structured_content.is_none());
        assert!(
            (&&&Probe::<String>::NEW)
                .sake_output_kind()
                .output_schema()
                .is_none()
        );
        let r = (&&&Probe::<i64>::NEW).sake_output_kind().convert(3);
        assert_eq!(r.structured_content.unwrap().get(), "3");
        let r = (&&&Probe::<Result<i64, String>>::NEW)
            .sake_output_kind()
            .convert(Err("boom".to_owned()));
        assert!(r.is_error());
        assert!(r.structured_content.is_none());
        let r = (&&&Probe::<Result<String, String>>::NEW)
            .sake_output_kind()
            .convert(Ok("x".to_owned()));
        assert_eq!(r.content[0].as_text(), Some("x"));
        assert!(
            (&&&Probe::<Result<i64, std::io::Error>>::NEW)
                .sake_output_kind()
                .output_schema()
                .is_some()
        );
    }
}
