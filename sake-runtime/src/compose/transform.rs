//! Tool transforms: a tool shown under another name, title or description, hidden, with
//! arguments fixed or defaulted by the server; and filters that keep only some tools. The same
//! types reshape a mounted module's tools and a proxied server's: both are applied to the
//! tool's listing (a [`Tool`]) at start-up, and to a call's arguments before the function (or
//! the upstream) sees them ([`ArgumentEdit`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::protocol::types::Tool;
use crate::registry::ArgumentEdit;

/// How one tool is shown and called: renamed, re-titled, re-described, hidden, with
/// arguments fixed or defaulted. Given to [`Module::transform`](super::Module::transform).
///
/// ```
/// use sake_runtime::compose::ToolTransform;
/// use serde_json::json;
///
/// let t = ToolTransform::new()
///     .rename("forecast")
///     .describe("The weather of the next days, in degrees Celsius.")
///     .fix("unit", json!("celsius"))
///     .default("days", json!(3));
/// # let _ = t;
/// ```
///
/// - A **renamed** tool keeps its module's prefix: `rename("plus")` in a module mounted under
///   `math` is served as `math_plus`.
/// - A **fixed** argument leaves the input schema the client sees (its property and its
///   place in `required`); the value is put into every call, replacing whatever a client
///   sends for it.
/// - A **defaulted** argument stays in the schema, no longer required, with the value as its
///   `default`; a call that leaves it out gets the value.
/// - A **hidden** tool is neither listed nor callable: a call of it gets `Unknown tool`.
///
/// The function itself is untouched: it decodes the arguments as the transform left them.
#[derive(Clone, Debug, Default, PartialEq)]
#[must_use]
pub struct ToolTransform {
    pub(crate) name: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) hidden: bool,
    pub(crate) fixed: Map<String, Value>,
    pub(crate) defaults: Map<String, Value>,
}

impl ToolTransform {
    /// A transform that changes nothing yet.
    pub fn new() -> Self {
        <ToolTransform as Default>::default()
    }

    /// Shows the tool under another name (before its prefix, if it has one).
    pub fn rename(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Shows the tool under another display name (`title`).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Shows the tool with another description.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Neither lists nor serves the tool.
    pub fn hide(mut self) -> Self {
        self.hidden = true;
        self
    }

    /// Fixes an argument: removed from the schema the client sees, `value` put into every
    /// call.
    pub fn fix(mut self, argument: impl Into<String>, value: impl Into<Value>) -> Self {
        self.fixed.insert(argument.into(), value.into());
        self
    }

    /// Defaults an argument: no longer required, `value` given when a call leaves it out.
    pub fn default(mut self, argument: impl Into<String>, value: impl Into<Value>) -> Self {
        self.defaults.insert(argument.into(), value.into());
        self
    }

    /// What it does to a call's arguments, if anything.
    pub(crate) fn edit(&self) -> Option<ArgumentEdit> {
        (!self.fixed.is_empty() || !self.defaults.is_empty()).then(|| ArgumentEdit {
            fixed: self.fixed.clone(),
            defaults: self.defaults.clone(),
        })
    }

    /// Why it cannot apply to a tool whose input schema is `schema`, if it cannot: an
    /// argument fixed or defaulted that is not a property of the schema, or both fixed and
    /// defaulted.
    pub(crate) fn refusal(&self, schema: &Value) -> Option<String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let known: Vec<&str> = properties
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        for (how, args) in [("fixes", &self.fixed), ("defaults", &self.defaults)] {
            if let Some(arg) = args.keys().find(|a| !known.contains(&a.as_str())) {
                let known = if known.is_empty() {
                    "it has no arguments".to_owned()
                } else {
                    format!("its arguments are {}", known.join(", "))
                };
                return Some(format!(
                    "its ToolTransform {how} the argument `{arg}`, which it does not take ({known})"
                ));
            }
        }
        if let Some(arg) = self.fixed.keys().find(|a| self.defaults.contains_key(*a)) {
            return Some(format!(
                "its ToolTransform both fixes and defaults the argument `{arg}`: choose one"
            ));
        }
        None
    }

    /// Applies the title, description and arguments to a listing (the name is the caller's:
    /// it adds the prefix). A fixed argument leaves `properties` and `required`; a defaulted
    /// one leaves `required` and gets its `default`.
    pub(crate) fn apply_listing(&self, tool: &mut Tool) {
        if let Some(title) = &self.title {
            tool.title = Some(title.clone());
        }
        if let Some(description) = &self.description {
            tool.description = Some(description.clone());
        }
        let Some(schema) = tool.input_schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for arg in self.fixed.keys() {
                properties.remove(arg);
            }
            for (arg, value) in &self.defaults {
                if let Some(Value::Object(property)) = properties.get_mut(arg) {
                    property.insert("default".into(), value.clone());
                }
            }
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| {
                r.as_str()
                    .is_none_or(|r| !self.fixed.contains_key(r) && !self.defaults.contains_key(r))
            });
            if required.is_empty() {
                schema.remove("required");
            }
        }
    }
}

/// Which tools a module (or a proxied server) keeps: a predicate on each tool's listing, as
/// the server would show it. sake has no tags; a filter reads the annotations
/// (`readOnlyHint`, `destructiveHint`, …), the name, or anything else the listing holds.
///
/// ```
/// use sake_runtime::compose::ToolFilter;
///
/// let safe = ToolFilter::read_only();
/// let no_admin = ToolFilter::new(|tool| !tool.name.starts_with("admin"));
/// # let _ = (safe, no_admin);
/// ```
#[derive(Clone)]
#[must_use]
pub struct ToolFilter(Arc<dyn Fn(&Tool) -> bool + Send + Sync>);

impl ToolFilter {
    /// Keeps the tools for which `keep` is true.
    pub fn new(keep: impl Fn(&Tool) -> bool + Send + Sync + 'static) -> Self {
        ToolFilter(Arc::new(keep))
    }

    /// Keeps the tools that say they only read (`readOnlyHint: true`).
    pub fn read_only() -> Self {
        ToolFilter::new(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true))
    }

    /// Keeps the tools that say they destroy nothing: read-only ones, and those with
    /// `destructiveHint: false` (the spec's default is `true`).
    pub fn not_destructive() -> Self {
        ToolFilter::new(|t| {
            t.annotations.as_ref().is_some_and(|a| {
                a.read_only_hint == Some(true) || a.destructive_hint == Some(false)
            })
        })
    }

    /// Whether it keeps `tool`.
    pub fn keeps(&self, tool: &Tool) -> bool {
        (self.0)(tool)
    }
}

impl std::fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolFilter(..)")
    }
}

/// How a set of tools is reshaped: the transforms by the tools' own names, and a filter. A
/// mounted module has one; so does a proxied server.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reshape {
    pub transforms: BTreeMap<String, ToolTransform>,
    pub filter: Option<ToolFilter>,
}

impl Reshape {
    /// Whether it changes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.transforms.is_empty() && self.filter.is_none()
    }

    /// The transform of the tool named `name` (its own name), if any.
    pub(crate) fn transform(&self, name: &str) -> Option<&ToolTransform> {
        self.transforms.get(name)
    }

    /// Whether the tool whose listing is `tool` is served: not hidden, and kept by the
    /// filter.
    pub(crate) fn keeps(&self, tool: &Tool) -> bool {
        !self.transform(&tool.name).is_some_and(|t| t.hidden)
            && self.filter.as_ref().is_none_or(|f| f.keeps(tool))
    }

    /// The names its transforms give that are not in `names` (a transform of a tool that
    /// does not exist).
    pub(crate) fn unknown<'a>(&'a self, names: &[&str]) -> Vec<&'a str> {
        self.transforms
            .keys()
            .map(String::as_str)
            .filter(|n| !names.contains(n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        Tool::new("t", schema)
    }

    #[test]
    fn a_fixed_argument_leaves_the_schema_and_a_default_is_no_longer_required() {
        let t = ToolTransform::new()
            .fix("unit", "celsius")
            .default("days", 3)
            .describe("d");
        let mut listing = tool(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "unit", "days"],
        }));
        assert_eq!(t.refusal(&listing.input_schema), None);
        t.apply_listing(&mut listing);
        assert_eq!(
            listing.input_schema,
            json!({
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
                "required": ["city"],
            })
        );
        assert_eq!(listing.description.as_deref(), Some("d"));
        let edit = t.edit().unwrap();
        let raw =
            serde_json::value::to_raw_value(&json!({"city": "Oslo", "unit": "kelvin"})).unwrap();
        assert_eq!(
            edit.apply(Some(&raw)).unwrap().get(),
            r#"{"city":"Oslo","unit":"celsius","days":3}"#
        );
        let raw = serde_json::value::to_raw_value(&json!({"days": 7})).unwrap();
        assert_eq!(
            edit.apply(Some(&raw)).unwrap().get(),
            r#"{"days":7,"unit":"celsius"}"#
        );
        assert_eq!(
            edit.apply(None).unwrap().get(),
            r#"{"days":3,"unit":"celsius"}"#
        );
    }

    #[test]
    fn a_transform_of_an_argument_the_tool_lacks_is_refused() {
        let schema = json!({"type": "object", "properties": {"a": {}}});
        assert_eq!(
            ToolTransform::new().fix("b", 1).refusal(&schema).as_deref(),
            Some(
                "its ToolTransform fixes the argument `b`, which it does not take (its arguments are a)"
            )
        );
        assert_eq!(
            ToolTransform::new()
                .fix("a", 1)
                .default("a", 2)
                .refusal(&schema)
                .as_deref(),
            Some("its ToolTransform both fixes and defaults the argument `a`: choose one")
        );
    }
}
