//! MCP Apps in the registry: a view as `#[view]` declares it ([`ViewDef`]), a tool's link to
//! its view ([`ToolUiDef`]), the [`View`] trait through which `#[tool(ui = MyView)]` names a
//! view the compiler checks, and the glue that turns a function into a view's HTML.

use std::fmt::Display;
use std::future::Future;

use super::context::Context;
use super::{BoxFuture, Location};
use crate::protocol::apps::Visibility;
use crate::protocol::jsonrpc::RpcError;

/// A view declared with `#[view]` on a unit struct: `#[tool(ui = TheStruct)]` links a tool to
/// it, and the compiler checks that the view exists.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a view",
    label = "`ui = …` takes a struct declared with #[view(uri = \"ui://…\", html = …)], or the view's URI as a string",
    note = "declare the view: `#[view(uri = \"ui://my-server/card\", html = \"card.html\")] struct Card;`"
)]
pub trait View {
    /// The view's `ui://` URI.
    const URI: &'static str;
}

/// Where a view's HTML comes from.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum ViewHtml {
    /// A file embedded at compile time (`html = "card.html"`), with the SHA-256 of its bytes
    /// (lowercase hex), computed by the macro.
    Embedded {
        /// The document.
        text: &'static str,
        /// `sha256` of `text`, lowercase hex.
        sha256: &'static str,
    },
    /// A function called on each read (`html = path::to::function`).
    Function(ViewFn),
}

impl ViewHtml {
    /// An embedded document; `sha256` is the lowercase hex SHA-256 of `text` (checked at
    /// start-up when written by hand).
    pub const fn embedded(text: &'static str, sha256: &'static str) -> ViewHtml {
        ViewHtml::Embedded { text, sha256 }
    }

    /// A document made by a function on each read.
    pub const fn function(f: ViewFn) -> ViewHtml {
        ViewHtml::Function(f)
    }
}

/// The generated glue of a function that makes a view's HTML.
pub type ViewFn = fn(Context) -> BoxFuture<Result<String, RpcError>>;

/// `csp(...)` of a view: the origins it may reach.
#[derive(Clone, Copy, Debug, Default)]
pub struct CspDef {
    /// `connect_domains = [...]`: `fetch`, XHR, WebSocket.
    pub connect_domains: &'static [&'static str],
    /// `resource_domains = [...]`: scripts, styles, images, fonts, media.
    pub resource_domains: &'static [&'static str],
    /// `frame_domains = [...]`: nested iframes.
    pub frame_domains: &'static [&'static str],
    /// `base_uri_domains = [...]`: the document's base URI.
    pub base_uri_domains: &'static [&'static str],
}

/// A view (an MCP Apps UI resource), as `#[view]` registers it.
#[derive(Debug)]
pub struct ViewDef {
    /// Its `ui://` URI.
    pub uri: &'static str,
    /// Its name (the struct's, unless `name = "..."`).
    pub name: &'static str,
    /// Display name.
    pub title: Option<&'static str>,
    /// The doc comment.
    pub description: Option<&'static str>,
    /// Its HTML.
    pub html: ViewHtml,
    /// The origins it may reach (`csp(...)`); `None`: none.
    pub csp: Option<CspDef>,
    /// The browser capabilities it asks for, by their names on the wire: `camera`,
    /// `microphone`, `geolocation`, `clipboardWrite`.
    pub permissions: &'static [&'static str],
    /// A dedicated origin for its sandbox, in the host's format.
    pub domain: Option<&'static str>,
    /// Whether it asks for a visible border and background.
    pub prefers_border: Option<bool>,
    /// Where it is defined.
    pub location: Location,
}

inventory::collect!(ViewDef);

/// A tool's link to MCP Apps (`#[tool(ui = …, visibility(…))]`): its view and who may call it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ToolUiDef {
    /// The `ui://` URI of the view that renders its results.
    pub resource_uri: Option<&'static str>,
    /// Who may see and call it; empty: the default, `["model", "app"]`.
    pub visibility: &'static [Visibility],
}

impl ToolUiDef {
    /// No view, the default visibility: a tool MCP Apps do not change.
    pub const NONE: ToolUiDef = ToolUiDef {
        resource_uri: None,
        visibility: &[],
    };

    /// Whether the tool has a view or a visibility of its own.
    pub fn is_some(&self) -> bool {
        self.resource_uri.is_some() || !self.visibility.is_empty()
    }
}

/// What a view's HTML function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a view's HTML",
    label = "return a String or a &'static str (or a Result of one, with an error that is Display)"
)]
pub trait IntoHtml {
    /// The document, or the error `resources/read` answers with.
    fn into_html(self) -> Result<String, RpcError>;
}

impl IntoHtml for String {
    fn into_html(self) -> Result<String, RpcError> {
        Ok(self)
    }
}

impl IntoHtml for &'static str {
    fn into_html(self) -> Result<String, RpcError> {
        Ok(self.to_owned())
    }
}

impl<T: IntoHtml, E: Display> IntoHtml for Result<T, E> {
    fn into_html(self) -> Result<String, RpcError> {
        match self {
            Ok(v) => v.into_html(),
            Err(e) => Err(RpcError::internal(e.to_string())),
        }
    }
}

/// A function that makes a view's HTML: sync or async, taking nothing or a [`Context`],
/// returning what [`IntoHtml`] converts. `M` tells the four shapes apart.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot make a view's HTML",
    label = "`html = …` takes a file name (a string) or a function: `fn() -> String`, `async fn(Context) -> Result<String, E>`, …",
    note = "the function may be async, may take a `Context`, and returns a String, a &'static str, or a Result of one"
)]
pub trait HtmlFn<M>: Send + Sync + 'static {
    /// Starts making the document.
    fn call(&self, ctx: Context) -> BoxFuture<Result<String, RpcError>>;
}

/// Markers of [`HtmlFn`]'s shapes.
#[doc(hidden)]
#[allow(missing_debug_implementations)]
pub struct SyncNoArgs<R>(std::marker::PhantomData<R>);
#[doc(hidden)]
#[allow(missing_debug_implementations)]
pub struct SyncContext<R>(std::marker::PhantomData<R>);
#[doc(hidden)]
#[allow(missing_debug_implementations)]
pub struct AsyncNoArgs<R>(std::marker::PhantomData<R>);
#[doc(hidden)]
#[allow(missing_debug_implementations)]
pub struct AsyncContext<R>(std::marker::PhantomData<R>);

impl<F, R> HtmlFn<SyncNoArgs<R>> for F
where
    F: Fn() -> R + Send + Sync + 'static,
    R: IntoHtml,
{
    fn call(&self, _: Context) -> BoxFuture<Result<String, RpcError>> {
        Box::pin(std::future::ready(self().into_html()))
    }
}

impl<F, R> HtmlFn<SyncContext<R>> for F
where
    F: Fn(Context) -> R + Send + Sync + 'static,
    R: IntoHtml,
{
    fn call(&self, ctx: Context) -> BoxFuture<Result<String, RpcError>> {
        Box::pin(std::future::ready(self(ctx).into_html()))
    }
}

impl<F, Fut, R> HtmlFn<AsyncNoArgs<R>> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoHtml,
{
    fn call(&self, _: Context) -> BoxFuture<Result<String, RpcError>> {
        let fut = self();
        Box::pin(async move { fut.await.into_html() })
    }
}

impl<F, Fut, R> HtmlFn<AsyncContext<R>> for F
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoHtml,
{
    fn call(&self, ctx: Context) -> BoxFuture<Result<String, RpcError>> {
        let fut = self(ctx);
        Box::pin(async move { fut.await.into_html() })
    }
}

/// Calls a view's HTML function (generated code only).
pub fn view_html<M, F: HtmlFn<M>>(f: F, ctx: Context) -> BoxFuture<Result<String, RpcError>> {
    f.call(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::detached()
    }

    fn plain() -> &'static str {
        "<!doctype html><p>plain"
    }
    fn with_context(ctx: Context) -> String {
        format!("<!doctype html><p>{}", ctx.revision())
    }
    async fn later() -> Result<String, std::io::Error> {
        Ok("<!doctype html><p>later".into())
    }
    async fn failing(_: Context) -> Result<String, String> {
        Err("no template".into())
    }

    #[tokio::test]
    async fn every_shape_makes_html() {
        assert_eq!(
            view_html(plain, ctx()).await.unwrap(),
            "<!doctype html><p>plain"
        );
        assert_eq!(
            view_html(with_context, ctx()).await.unwrap(),
            "<!doctype html><p>2026-07-28"
        );
        assert_eq!(
            view_html(later, ctx()).await.unwrap(),
            "<!doctype html><p>later"
        );
        let e = view_html(failing, ctx()).await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (-32603, "no template"));
    }
}
