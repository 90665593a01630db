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
mod rules;
#[cfg(test)]
mod tests;
mod walk;

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::protocol::types::Tool;
use crate::registry::Registry;

/// A reader of tool schemas with its own rules: a model provider's function-calling dialect, a
/// client, or the JSON Schema dialect the MCP specification requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub enum Profile {
    /// OpenAI strict function calling (`"strict": true`, the Structured Outputs subset of JSON
    /// Schema).
    #[serde(rename = "openai-strict")]
    OpenAiStrict,
    /// Gemini function declarations: the `parameters` field, a subset of the OpenAPI 3.0 Schema
    /// object (Gemini API v1beta). Clients that send `parametersJsonSchema` instead are spared
    /// most of these rules.
    #[serde(rename = "gemini")]
    Gemini,
    /// VS Code's MCP support (GitHub Copilot Chat), which validates tool schemas before use.
    #[serde(rename = "vscode")]
    VsCode,
    /// JSON Schema 2020-12 as the MCP specification requires it (MCP's default dialect).
    #[serde(rename = "json-schema-2020-12")]
    JsonSchema2020,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 4] = [
        Profile::OpenAiStrict,
        Profile::Gemini,
        Profile::VsCode,
        Profile::JsonSchema2020,
    ];

    /// A short identifier: `openai-strict`, `gemini`, `vscode`, `json-schema-2020-12`.
    pub fn id(self) -> &'static str {
        match self {
            Profile::OpenAiStrict => "openai-strict",
            Profile::Gemini => "gemini",
            Profile::VsCode => "vscode",
            Profile::JsonSchema2020 => "json-schema-2020-12",
        }
    }

    /// A name for people.
    pub fn title(self) -> &'static str {
        match self {
            Profile::OpenAiStrict => "OpenAI strict function calling",
            Profile::Gemini => "Gemini function declarations (v1beta `parameters`)",
            Profile::VsCode => "VS Code (GitHub Copilot Chat)",
            Profile::JsonSchema2020 => "JSON Schema 2020-12 (MCP)",
        }
    }

    /// Whether the profile reads output schemas too. Model providers only see a tool's
    /// `inputSchema` (as function parameters); the MCP rules cover both.
    pub fn checks_output(self) -> bool {
        self == Profile::JsonSchema2020
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

/// How sure a finding is that the schema is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The reader refuses the schema (or the tool): the source documents it or shows it.
    Error,
    /// The reader loses part of the schema, or some versions or setups refuse it.
    Warning,
}

/// Whether sake's normalisation fixes what a rule finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Automatic {
    /// Always: [`normalize`] removes every finding of the rule.
    Always,
    /// For some findings (each [`Fix`] says which); the others need a change of type.
    Sometimes,
    /// Never: the schema's author must change it.
    Never,
}

/// One thing a profile refuses, as data.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct Rule {
    /// A stable identifier, such as `openai.required`.
    pub id: &'static str,
    /// The profiles the rule belongs to.
    pub profiles: &'static [Profile],
    /// How sure a finding of this rule is.
    pub level: Level,
    /// What the rule requires, in one sentence.
    pub summary: &'static str,
    /// Where the rule comes from: the documentation page first, then issues that show it.
    pub sources: &'static [&'static str],
    /// How a finding of the rule is fixed.
    pub fix: &'static str,
    /// Whether sake fixes it.
    pub automatic: Automatic,
}

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

/// Which part of a tool a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Part {
    /// The tool's name.
    #[serde(rename = "name")]
    Name,
    /// Its `inputSchema`.
    #[serde(rename = "inputSchema")]
    InputSchema,
    /// Its `outputSchema`.
    #[serde(rename = "outputSchema")]
    OutputSchema,
}

impl Part {
    fn as_str(self) -> &'static str {
        match self {
            Part::Name => "name",
            Part::InputSchema => "inputSchema",
            Part::OutputSchema => "outputSchema",
        }
    }
}

/// How a finding is fixed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// Whether [`normalize`] fixes it.
    pub automatic: bool,
    /// What sake does, or what to change (in Rust terms where the schema came from a type).
    pub how: String,
}

/// One place where a profile refuses a tool's schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The tool's name (empty when a schema was checked on its own).
    pub tool: String,
    /// The part of the tool.
    pub part: Part,
    /// An RFC 6901 JSON pointer into that part's schema (`""` is the root).
    pub pointer: String,
    /// The rule's identifier (see [`rule`]).
    pub rule: &'static str,
    /// How sure the finding is.
    pub level: Level,
    /// What is wrong, here.
    pub message: String,
    /// How it is fixed.
    pub fix: Fix,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        write!(f, "{level} [{}] ", self.rule)?;
        if !self.tool.is_empty() {
            write!(f, "tool `{}` ", self.tool)?;
        }
        write!(f, "{}", self.part.as_str())?;
        if self.part != Part::Name {
            write!(f, " at \"{}\"", self.pointer)?;
        }
        write!(f, ": {}", self.message)?;
        let how = if self.fix.automatic {
            "fixed by sake"
        } else {
            "to fix"
        };
        write!(f, " ({how}: {})", self.fix.how)
    }
}

/// The findings of one profile over a server's tools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The profile.
    pub profile: Profile,
    /// How many tools were checked.
    pub tools: usize,
    /// What was found, tool by tool (tools in name order), in document order.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The findings of level [`Level::Error`].
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.level == Level::Error)
    }

    /// Whether nothing of level [`Level::Error`] was found.
    pub fn is_accepted(&self) -> bool {
        self.errors().next().is_none()
    }

    /// The findings that need a change by the schema's author (no automatic fix).
    pub fn manual(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.fix.automatic)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors = self.errors().count();
        let warnings = self.findings.len() - errors;
        let mut tools: Vec<&str> = self.findings.iter().map(|f| f.tool.as_str()).collect();
        tools.dedup();
        writeln!(
            f,
            "{} ({}): {errors} error(s), {warnings} warning(s) in {} of {} tool(s)",
            self.profile.title(),
            self.profile.id(),
            tools.len(),
            self.tools
        )?;
        for finding in &self.findings {
            writeln!(f, "  {finding}")?;
        }
        Ok(())
    }
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
    /// Log each finding, and refuse to start ([`Error::IncompatibleSchemas`]) if any is an
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
/// asked, then checks what will be served.
pub(crate) fn at_startup(registry: &mut Registry, startup: &Startup) -> Result<(), Error> {
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
        return Err(Error::IncompatibleSchemas(
            reports
                .into_iter()
                .map(|mut r| {
                    r.findings.retain(|f| f.level == Level::Error);
                    r
                })
                .filter(|r| !r.findings.is_empty())
                .collect(),
        ));
    }
    Ok(())
}

/// The message of [`Error::IncompatibleSchemas`].
pub(crate) fn describe(reports: &[Report]) -> String {
    let mut out = String::from(
        "tool schemas that clients refuse (fix them, normalise them with `Server::normalize_schemas`, or check with `Severity::Warn`):\n",
    );
    for report in reports {
        out.push_str(&report.to_string());
    }
    out
}
