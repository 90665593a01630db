//! MCP Apps for a host (`io.modelcontextprotocol/ui`): a tool's view read with
//! `resources/read` from its `_meta.ui.resourceUri`, with what the host needs to render it
//! safely (the policy built from its `_meta.ui`, its permissions, its border).

use base64::Engine as _;

use super::{Client, ClientError};
use crate::protocol::apps::{MIME_TYPE, ToolUi, ViewMeta};
use crate::protocol::types::{ResourceContents, Tool};

/// A tool's view, read: its HTML document and its `_meta.ui`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AppView {
    /// The view's `ui://` URI.
    pub uri: String,
    /// The HTML document a host loads in its sandboxed iframe.
    pub html: String,
    /// The view's `_meta.ui`: its Content Security Policy, permissions, domain, border.
    pub meta: ViewMeta,
    /// The tool's `_meta.ui`: who may see and call it.
    pub tool: ToolUi,
}

impl AppView {
    /// The `Content-Security-Policy` to load the view under, as the specification builds it
    /// from the view's `csp` (the restrictive default when it declares none).
    pub fn content_security_policy(&self) -> String {
        self.meta.content_security_policy()
    }

    /// The iframe `allow` attribute for the permissions it asks for (empty: none).
    pub fn allow_attribute(&self) -> String {
        self.meta
            .permissions
            .map(|p| p.allow_attribute())
            .unwrap_or_default()
    }
}

impl Client {
    /// Reads the view of `tool` (MCP Apps): `Ok(None)` for a tool without one; otherwise the
    /// resource its `_meta.ui.resourceUri` names, which must be one `text/html;profile=mcp-app`
    /// document. Declare the extension ([`ClientBuilder::apps`](super::ClientBuilder::apps))
    /// so that servers list tools with their views.
    pub async fn view(&self, tool: &Tool) -> Result<Option<AppView>, ClientError> {
        let Some(ui) = ToolUi::of(tool) else {
            return Ok(None);
        };
        let Some(uri) = ui.resource_uri.clone() else {
            return Ok(None);
        };
        let read = self.read(&uri).await?;
        let bad = |why: String| {
            ClientError::Protocol(format!("the view {uri} of tool {}: {why}", tool.name))
        };
        let [contents] = read.contents.as_slice() else {
            return Err(bad(format!(
                "resources/read answered {} contents; a view is one document",
                read.contents.len()
            )));
        };
        let (mime_type, html) = match contents {
            ResourceContents::Text(t) => (t.mime_type.as_deref(), t.text.clone()),
            ResourceContents::Blob(b) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&b.blob)
                    .map_err(|e| bad(format!("its blob is not Base64: {e}")))?;
                let html = String::from_utf8(bytes)
                    .map_err(|_| bad("its blob is not UTF-8 text".to_owned()))?;
                (b.mime_type.as_deref(), html)
            }
        };
        if mime_type != Some(MIME_TYPE) {
            return Err(bad(format!(
                "its MIME type is {}, not {MIME_TYPE}",
                mime_type.unwrap_or("missing")
            )));
        }
        Ok(Some(AppView {
            uri,
            html,
            meta: ViewMeta::of_contents(contents),
            tool: ui,
        }))
    }
}
