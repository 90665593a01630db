//! What a compatibility check finds: the profiles, the rules as data, and the findings and
//! reports, on their own so that a start-up error can carry them without the checker.

use std::fmt;

use serde::Serialize;

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
    /// Always: `normalize` removes every finding of the rule.
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
    pub(crate) fn as_str(self) -> &'static str {
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
    /// Whether `normalize` fixes it.
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
    /// The rule's identifier (see `compat::rule`).
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

/// The message of `Error::IncompatibleSchemas`.
pub(crate) fn describe(reports: &[Report]) -> String {
    let mut out = String::from(
        "tool schemas that clients refuse (fix them, normalise them with `Server::normalize_schemas`, or check with `Severity::Warn`):\n",
    );
    for report in reports {
        out.push_str(&report.to_string());
    }
    out
}
