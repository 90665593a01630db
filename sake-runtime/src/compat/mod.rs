//! Whether the tool schemas a server lists are accepted by the clients and model providers that
//! will read them, and copies of the schemas fixed for each.
//!
//! A schema that is valid JSON Schema can still be refused: OpenAI's strict function calling
//! takes a subset of JSON Schema, Gemini's function declarations take a subset of the OpenAPI
//! 3.0 Schema object, VS Code validates tool schemas against draft-07 and refuses arrays without
//! `items`. Each [`Profile`] is one of these readers; each [`Rule`] is one thing it refuses, with
//! its source. [`check_registry`] (and [`crate::testing::compatibility`]) give a [`Report`] per
//! profile: each [`Finding`] names the tool, the JSON pointer (RFC 6901) into its schema, the
//! rule and the fix, which sake applies itself where it can ([`normalize`]).
//!
//! Nothing here changes what a server serves unless its builder asks for it:
//! [`Server::check_schemas`](crate::Server::check_schemas) checks at start-up (a warning per
//! finding, or a refusal to start), and
//! [`Server::normalize_schemas`](crate::Server::normalize_schemas) serves the normalised copies.
//!
//! ```
//! use sake::compat::{self, Part, Profile};
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"tags": {"type": "array"}, "note": {"type": "string"}},
//!     "required": ["tags"]
//! });
//! let found = compat::check(Profile::VsCode, Part::InputSchema, &schema);
//! assert_eq!(found[0].pointer, "/properties/tags");
//! assert_eq!(found[0].rule, "vscode.array-items");
//! let fixed = compat::normalize(Profile::VsCode, Part::InputSchema, &schema);
//! assert_eq!(fixed["properties"]["tags"], json!({"type": "array", "items": {}}));
//! ```
//!
//! Prompt arguments have no schemas (a prompt lists names, descriptions and whether each is
//! required), so only tools are checked.

mod check;
mod fix;
mod meta;
mod refs;
pub(crate) mod report;
mod rules;
#[cfg(test)]
mod tests;
mod walk;

use serde_json::Value;

pub use report::{Automatic, Finding, Fix, Level, Part, Profile, Report, Rule};

use crate::protocol::types::Tool;
use crate::registry::Registry;

/// Every rule; with `Some(profile)`, that profile's.
pub fn rules(profile: Option<Profile>) -> impl Iterator<Item = &'static Rule> {
    rules::RULES
        .iter()
        .filter(move |r| profile.is_none_or(|p| r.profiles.contains(&p)))
}

/// A rule by its identifier.
pub fn rule(id: &str) -> Option<&'static Rule> {
    rules::RULES.iter().find(|r| r.id == id)
}

/// Checks one schema (a tool's `inputSchema` or `outputSchema`) against a profile. The
/// findings' `tool` is empty. A profile that does not read output schemas finds nothing in one.
pub fn check(profile: Profile, part: Part, schema: &Value) -> Vec<Finding> {
    let applies = match part {
        Part::Name => false,
        Part::InputSchema => true,
        Part::OutputSchema => profile.checks_output(),
    };
    if !applies {
        return Vec::new();
    }
    check::schema(profile, part, schema)
        .into_iter()
        .map(|raw| raw.into_finding(String::new(), part))
        .collect()
}

/// Checks a tool (its name and schemas) against a profile.
pub fn check_tool(profile: Profile, tool: &Tool) -> Vec<Finding> {
    let mut out: Vec<Finding> = check::name(profile, &tool.name)
        .into_iter()
        .map(|raw| raw.into_finding(tool.name.clone(), Part::Name))
        .collect();
    let mut schema = |part, schema: &Value| {
        out.extend(check(profile, part, schema).into_iter().map(|mut f| {
            f.tool.clone_from(&tool.name);
            f
        }));
    };
    schema(Part::InputSchema, &tool.input_schema);
    if let Some(output) = &tool.output_schema {
        schema(Part::OutputSchema, output);
    }
    out
}

/// Checks every tool of a registry against a profile.
pub fn check_registry(registry: &Registry, profile: Profile) -> Report {
    Report {
        profile,
        tools: registry.tools.len(),
        findings: registry
            .tools
            .iter()
            .flat_map(|t| check_tool(profile, &t.listing))
            .collect(),
    }
}

/// A copy of `schema` with every automatic fix of `profile` applied. A profile that does not
/// read output schemas returns an output schema unchanged. What is left for the author is what
/// [`check`] still finds in the copy.
pub fn normalize(profile: Profile, part: Part, schema: &Value) -> Value {
    let mut out = schema.clone();
    let applies = match part {
        Part::Name => false,
        Part::InputSchema => true,
        Part::OutputSchema => profile.checks_output(),
    };
    if applies {
        fix::apply(profile, part, &mut out);
    }
    out
}

/// A copy of a tool listing with its schemas normalised for `profile`.
pub fn normalize_tool(profile: Profile, tool: &Tool) -> Tool {
    let mut out = tool.clone();
    out.input_schema = normalize(profile, Part::InputSchema, &tool.input_schema);
    out.output_schema = tool
        .output_schema
        .as_ref()
        .map(|s| normalize(profile, Part::OutputSchema, s));
    out
}

/// What the start-up check does with findings of level [`Level::Error`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Severity {
    /// Log each finding (`tracing::warn!`) and start.
    #[default]
    Warn,
    /// Log each finding, and refuse to start ([`Error::IncompatibleSchemas`](crate::Error::IncompatibleSchemas)) if any is an
    /// error. Warnings never stop the server.
    Deny,
}

/// The builder's schema settings.
#[derive(Clone, Debug, Default)]
pub(crate) struct Startup {
    /// The profiles to check at start-up.
    pub check: Vec<Profile>,
    pub severity: Severity,
    /// The profiles whose normalisation the served lists get, in order.
    pub normalize: Vec<Profile>,
}

/// Applies the builder's settings to a collected registry: normalises the served schemas if
/// asked, then checks what will be served. `Err` holds the reports of a check that refuses
/// to start (their findings of level error).
pub(crate) fn at_startup(registry: &mut Registry, startup: &Startup) -> Result<(), Vec<Report>> {
    for profile in &startup.normalize {
        for entry in &mut registry.tools {
            let normalized = normalize_tool(*profile, &entry.listing);
            // The `Mcp-Param-*` headers were read from the served schema: the normalisation
            // keeps `x-mcp-header` properties where they are, which this re-reading confirms.
            match crate::protocol::headers::header_params(&normalized.input_schema) {
                Ok(headers) if headers == entry.headers => entry.listing = normalized,
                _ => tracing::warn!(
                    tool = entry.def.name,
                    profile = profile.id(),
                    "the schema of tool `{}` is served as written: normalising it for {} would move its `x-mcp-header` annotations",
                    entry.def.name,
                    profile.title()
                ),
            }
        }
    }
    if startup.check.is_empty() {
        return Ok(());
    }
    let reports: Vec<Report> = startup
        .check
        .iter()
        .map(|p| check_registry(registry, *p))
        .collect();
    for report in &reports {
        for finding in &report.findings {
            tracing::warn!(
                profile = report.profile.id(),
                tool = %finding.tool,
                part = finding.part.as_str(),
                pointer = %finding.pointer,
                rule = finding.rule,
                level = ?finding.level,
                automatic = finding.fix.automatic,
                "{}: {finding}",
                report.profile.title()
            );
        }
    }
    if startup.severity == Severity::Deny && reports.iter().any(|r| !r.is_accepted()) {
        return Err(reports
            .into_iter()
            .map(|mut r| {
                r.findings.retain(|f| f.level == Level::Error);
                r
            })
            .filter(|r| !r.findings.is_empty())
            .collect());
    }
    Ok(())
}
