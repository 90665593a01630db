//! Names and URIs under the prefix, both ways: what the client sees, what the upstream knows;
//! and what of the upstream's listings this server serves.

use super::*;

impl ProxyInner {
    /// A name as this server shows it.
    pub(super) fn outer(&self, name: &str) -> String {
        match self.prefix {
            Some(p) => prefixed_name(p, name),
            None => name.to_owned(),
        }
    }

    /// A name as the upstream knows it, if it is under this prefix.
    pub(super) fn inner<'a>(&self, name: &'a str) -> Option<&'a str> {
        match self.prefix {
            Some(p) => name.strip_prefix(p)?.strip_prefix(SEPARATOR),
            None => Some(name),
        }
    }

    /// The upstream's name of the tool served as `name`, if this source serves a tool of
    /// that name: under its prefix, and neither hidden nor renamed away.
    pub(super) fn upstream_tool<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let own = self.inner(name)?;
        let own = match self.renamed.get(own) {
            Some(original) => original.as_str(),
            None if self
                .upstream
                .reshape
                .transform(own)
                .is_some_and(|t| t.name.is_some()) =>
            {
                return None;
            }
            None => own,
        };
        (!self
            .upstream
            .reshape
            .transform(own)
            .is_some_and(|t| t.hidden))
        .then_some(own)
    }

    /// A URI as this server shows it (`docs://prefix/readme`).
    pub(super) fn outer_uri(&self, uri: &str) -> String {
        match self.prefix {
            Some(p) => prefixed_uri(p, uri),
            None => uri.to_owned(),
        }
    }

    /// A URI as the upstream knows it, if it is under this prefix.
    pub(super) fn inner_uri(&self, uri: &str) -> Option<String> {
        match self.prefix {
            Some(p) => unprefixed_uri(p, uri),
            None => Some(uri.to_owned()),
        }
    }

    /// The URIs of an upstream's result as this server shows them: a resource's contents,
    /// skills and directories, the resource links and embedded resources of a tool's result
    /// or a prompt's messages.
    pub(super) fn outer_result(&self, method: &str, result: &mut Value) {
        if self.prefix.is_none() {
            return;
        }
        match method {
            "tools/call" => {
                if let Some(Value::Array(content)) = result.get_mut("content") {
                    content.iter_mut().for_each(|c| self.outer_content(c));
                }
            }
            "prompts/get" => {
                if let Some(Value::Array(messages)) = result.get_mut("messages") {
                    for m in messages {
                        if let Some(c) = m.get_mut("content") {
                            self.outer_content(c);
                        }
                    }
                }
            }
            _ => self.outer_uris(result),
        }
    }

    /// A content block's URI as this server shows it (a resource link, an embedded
    /// resource).
    pub(super) fn outer_content(&self, content: &mut Value) {
        let slot = match content.get("type").and_then(Value::as_str) {
            Some("resource_link") => content.get_mut("uri"),
            Some("resource") => content.get_mut("resource").and_then(|r| r.get_mut("uri")),
            _ => None,
        };
        if let Some(Value::String(uri)) = slot {
            *uri = self.outer_uri(uri);
        }
    }

    /// Every `uri` of a result (but in `_meta` and a skill's frontmatter) as this server shows
    /// it.
    pub(super) fn outer_uris(&self, v: &mut Value) {
        match v {
            Value::Object(o) => {
                for (k, v) in o.iter_mut() {
                    match (k.as_str(), v) {
                        ("_meta" | "frontmatter", _) => {}
                        ("uri", Value::String(uri)) => *uri = self.outer_uri(uri),
                        (_, v) => self.outer_uris(v),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|v| self.outer_uris(v)),
            _ => {}
        }
    }

    /// Its tools as this server serves them: filtered, transformed, under the prefix, their
    /// views' URIs too; one of a name the program's own tool has is left out (the program's
    /// is served), logged, as is a transform of a tool it does not list.
    pub(super) fn served_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let reshape = &self.upstream.reshape;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        for unknown in reshape.unknown(&names) {
            tracing::warn!(
                prefix = self.label,
                "Upstream::transform names the tool `{unknown}`, which the upstream does not list: the transform does nothing"
            );
        }
        let taken = self.placed.get().map(|p| &p.tools);
        tools
            .into_iter()
            .filter(|t| reshape.keeps(t))
            .filter_map(|mut t| {
                let transform = reshape.transform(&t.name);
                if let Some(transform) = transform {
                    if let Some(why) = transform.refusal(&t.input_schema) {
                        tracing::warn!(
                            prefix = self.label,
                            "the upstream's tool `{}` is left out: {why}",
                            t.name
                        );
                        return None;
                    }
                    transform.apply_listing(&mut t);
                }
                let served = self.outer(transform.and_then(|t| t.name.as_deref()).unwrap_or(&t.name));
                if served != t.name && !is_valid_tool_name(&served) {
                    tracing::warn!(
                        prefix = self.label,
                        "the upstream's tool `{}` is left out: it would be served as `{served}`, which is not a tool name of at most 64 characters (rename it with Upstream::transform)",
                        t.name
                    );
                    return None;
                }
                if taken.is_some_and(|taken| taken.contains(&served)) {
                    tracing::warn!(
                        prefix = self.label,
                        "the upstream's tool `{}` is left out: it would be served as `{served}`, the name of this server's own tool, which is served instead (rename it with Upstream::transform)",
                        t.name
                    );
                    return None;
                }
                t.name = served;
                self.outer_view(&mut t);
                Some(t)
            })
            .collect()
    }

    /// A tool's view (`_meta.ui.resourceUri`, and the deprecated `_meta["ui/resourceUri"]`)
    /// under the prefix, as its `ui://` resource is.
    pub(super) fn outer_view(&self, tool: &mut Tool) {
        let Some(meta) = tool.meta.as_mut() else {
            return;
        };
        let nested = meta.get_mut("ui").and_then(|ui| ui.get_mut("resourceUri"));
        if let Some(Value::String(uri)) = nested {
            *uri = self.outer_uri(uri);
        }
        if let Some(Value::String(uri)) = meta.get_mut(crate::protocol::apps::RESOURCE_URI_META_KEY)
        {
            *uri = self.outer_uri(uri);
        }
    }

    /// Whether the program serves `key` of `kind` itself (its own is served; logged).
    pub(super) fn taken(&self, kind: ListKind, key: &str) -> bool {
        let Some(placed) = self.placed.get() else {
            return false;
        };
        let (taken, what) = match kind {
            ListKind::Prompts => (placed.prompts.contains(key), "prompt"),
            ListKind::Resources => (placed.resources.contains(key), "resource"),
            _ => (false, ""),
        };
        if taken {
            tracing::warn!(
                prefix = self.label,
                "the upstream's {what} `{key}` is left out: this server serves its own under that name"
            );
        }
        taken
    }
}
