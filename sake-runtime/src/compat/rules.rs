//! Every rule of the checker, as data: what it checks, for which profiles, where it comes from,
//! and how it is fixed. `docs/schema-compatibility.md` lists the same table.

use super::{Automatic, Level, Profile, Rule};

use Profile::{Gemini, JsonSchema2020, OpenAiStrict, VsCode};

const MCP_TOOL_2025_11_25: &str = "https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/schema/2025-11-25/schema.json (Tool.inputSchema)";
const MCP_TOOL_2026_07_28: &str = "https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/schema/2026-07-28/schema.json (Tool.inputSchema)";
const MCP_JSON_SCHEMA: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic#json-schema-usage";
const JSON_SCHEMA_META: &str = "https://json-schema.org/draft/2020-12/schema";
const JSON_SCHEMA_RELEASE: &str = "https://json-schema.org/draft/2020-12/release-notes";
const JSON_SCHEMA_2019_RELEASE: &str = "https://json-schema.org/draft/2019-09/release-notes";
const OPENAI: &str = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas";
const GEMINI_SCHEMA: &str = "https://ai.google.dev/api/caching#Schema (v1beta)";
const COPILOT_NORMALIZER: &str = "https://github.com/microsoft/vscode-copilot-chat/blob/main/src/extension/tools/common/toolSchemaNormalizer.ts";

/// The rules, in the order reports and the documentation list them.
pub(crate) static RULES: &[Rule] = &[
    // -----------------------------------------------------------------------------------------
    // Shared
    Rule {
        id: "mcp.input-object",
        profiles: &[JsonSchema2020, OpenAiStrict, Gemini, VsCode],
        level: Level::Error,
        summary: "An `inputSchema` must have `\"type\": \"object\"` at its root: tool arguments are a JSON object.",
        sources: &[
            MCP_TOOL_2025_11_25,
            MCP_TOOL_2026_07_28,
            "https://platform.openai.com/docs/guides/structured-outputs#root-objects-must-not-be-anyof-and-must-be-an-object",
            "https://github.com/diegosouzapw/OmniRoute/pull/3360",
            COPILOT_NORMALIZER,
        ],
        fix: "Take named parameters (the macros always describe them as an object); a custom `input_schema` must describe an object.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "mcp.ref-unresolved",
        profiles: &[JsonSchema2020, OpenAiStrict, VsCode],
        level: Level::Error,
        summary: "Every `$ref` must resolve inside the schema (`#`, `#/json/pointer` or `#anchor`): clients fetch nothing.",
        sources: &[
            "https://json-schema.org/draft/2020-12/json-schema-core#section-8.2.3.1",
            "https://github.com/microsoft/fabric-rti-mcp/issues/98",
            "https://github.com/perforce/p4mcp-server/issues/3",
        ],
        fix: "Point the `$ref` at a subschema of the same document, or inline the referenced schema.",
        automatic: Automatic::Never,
    },
    // -----------------------------------------------------------------------------------------
    // JSON Schema 2020-12, as MCP requires it
    Rule {
        id: "json-schema.meta",
        profiles: &[JsonSchema2020],
        level: Level::Error,
        summary: "Every keyword's value must have the shape the 2020-12 meta-schema gives it (`type` names, `required` strings, subschemas that are objects or booleans…).",
        sources: &[JSON_SCHEMA_META, MCP_JSON_SCHEMA],
        fix: "Correct the keyword's value in the custom schema.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "json-schema.dialect",
        profiles: &[JsonSchema2020],
        level: Level::Warning,
        summary: "A `$schema` other than 2020-12 picks a dialect clients need not support (they MUST support 2020-12, SHOULD document others).",
        sources: &[MCP_JSON_SCHEMA],
        fix: "Remove `$schema` (MCP's default dialect is 2020-12) and write the schema in 2020-12.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "json-schema.tuple-items",
        profiles: &[JsonSchema2020],
        level: Level::Error,
        summary: "`items` as an array is draft-07's tuple form; 2020-12 calls it `prefixItems` (and `additionalItems` became `items`).",
        sources: &[JSON_SCHEMA_RELEASE, JSON_SCHEMA_META],
        fix: "sake renames `items` to `prefixItems` and `additionalItems` to `items`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "json-schema.additional-items",
        profiles: &[JsonSchema2020],
        level: Level::Error,
        summary: "`additionalItems` means nothing in 2020-12: a validator ignores it.",
        sources: &[JSON_SCHEMA_RELEASE],
        fix: "sake turns it into `items` beside `prefixItems`, or drops it where `items` was a single schema (draft-07 ignored it there too).",
        automatic: Automatic::Always,
    },
    Rule {
        id: "json-schema.definitions",
        profiles: &[JsonSchema2020],
        level: Level::Warning,
        summary: "`definitions` is the draft-07 name of `$defs`; 2020-12 keeps it only for compatibility.",
        sources: &[JSON_SCHEMA_2019_RELEASE, JSON_SCHEMA_META],
        fix: "sake moves the entries to `$defs` and rewrites the `$ref`s that point into `definitions`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "json-schema.dependencies",
        profiles: &[JsonSchema2020],
        level: Level::Error,
        summary: "`dependencies` was split into `dependentRequired` and `dependentSchemas`; a 2020-12 validator ignores it.",
        sources: &[JSON_SCHEMA_2019_RELEASE, JSON_SCHEMA_META],
        fix: "sake moves arrays of names to `dependentRequired` and schemas to `dependentSchemas`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "json-schema.exclusive-boolean",
        profiles: &[JsonSchema2020],
        level: Level::Error,
        summary: "A boolean `exclusiveMinimum`/`exclusiveMaximum` is draft-04's form; since draft-06 it is the bound itself.",
        sources: &[
            "https://json-schema.org/draft-06/json-schema-release-notes",
            JSON_SCHEMA_META,
        ],
        fix: "sake writes `exclusiveMinimum: <minimum>` (and drops `minimum`) for `true`, and drops a `false`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "json-schema.recursive-ref",
        profiles: &[JsonSchema2020],
        level: Level::Error,
        summary: "`$recursiveRef`/`$recursiveAnchor` are 2019-09 keywords, replaced by `$dynamicRef`/`$dynamicAnchor`.",
        sources: &[JSON_SCHEMA_RELEASE],
        fix: "Use a plain `$ref` to the recursive definition (`#/$defs/Name`).",
        automatic: Automatic::Never,
    },
    Rule {
        id: "mcp.output-object",
        profiles: &[JsonSchema2020],
        level: Level::Warning,
        summary: "The handshake revisions (2025-06-18, 2025-11-25) require `\"type\": \"object\"` at an `outputSchema`'s root; 2026-07-28 takes any schema. sake leaves such a tool out of every handshake revision's list (2025-03-26 too).",
        sources: &[
            "https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/schema/2025-11-25/schema.json (Tool.outputSchema)",
        ],
        fix: "Return a struct (an object) for structured output, or a `String` for text only.",
        automatic: Automatic::Never,
    },
    // -----------------------------------------------------------------------------------------
    // OpenAI strict function calling (Structured Outputs)
    Rule {
        id: "openai.root-any-of",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "The root must be an object schema, not an `anyOf`.",
        sources: &[
            "https://platform.openai.com/docs/guides/structured-outputs#root-objects-must-not-be-anyof-and-must-be-an-object",
        ],
        fix: "Take the enum as one named parameter instead of as the whole argument object.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "openai.additional-properties",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "Every object must set `additionalProperties: false`; maps and free-form objects cannot be expressed.",
        sources: &[
            "https://platform.openai.com/docs/guides/structured-outputs#additionalproperties-false-must-always-be-set-in-objects",
            "https://github.com/vercel-labs/json-render/issues/180",
        ],
        fix: "sake adds `additionalProperties: false` to objects with declared properties; a map (`HashMap`, `BTreeMap`, `serde_json::Map`) must become a list of entries.",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "openai.required",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "Every property must be listed in `required`; an optional one is written as a union with `null`.",
        sources: &[
            "https://platform.openai.com/docs/guides/structured-outputs#all-fields-must-be-required",
            "https://github.com/anomalyco/opencode/issues/13737",
        ],
        fix: "sake lists the property in `required` and adds `null` to its type (an `Option<T>` reads `null` as `None`); a property with a `default` is listed without `null`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "openai.keyword",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "Only the supported subset of keywords is accepted: no `allOf`, `not`, `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`, `oneOf`, `patternProperties`, `propertyNames`, `prefixItems`, `uniqueItems`, `minLength`…",
        sources: &[
            "https://platform.openai.com/docs/guides/structured-outputs#some-type-specific-keywords-are-not-yet-supported",
            "https://community.openai.com/t/official-documentation-for-supported-schemas-for-response-format-parameter-in-calls-to-client-beta-chats-completions-parse/932422",
            "https://github.com/vercel-labs/json-render/issues/180",
        ],
        fix: "sake rewrites `oneOf` as `anyOf` and drops annotations and constraints the subset lacks (`$schema`, `minLength`, `uniqueItems`…); composition, conditions, tuples and maps must be restructured.",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "openai.type",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "Every subschema needs a `type` (or `anyOf`/`$ref`): a schema that accepts any JSON is refused.",
        sources: &[
            "https://github.com/apexive/odoo-llm/issues/212",
            "https://github.com/can1357/oh-my-pi/issues/211",
        ],
        fix: "sake infers the type of an `enum`/`const` of one JSON type; a `serde_json::Value` parameter must become a concrete type.",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "openai.array-items",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "An array schema must have `items` (\"array schema missing items\"), even without strict mode.",
        sources: &[
            "https://github.com/streamnative/streamnative-mcp-server/issues/26",
            "https://github.com/mark3labs/mcphost/issues/35",
            "https://github.com/sigoden/aichat/pull/1049",
        ],
        fix: "Give the array an element type: a `Vec<T>` of a concrete `T` (a tuple must become a struct).",
        automatic: Automatic::Never,
    },
    Rule {
        id: "openai.format",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "`format` must be one of date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid.",
        sources: &[OPENAI, "https://github.com/can1357/oh-my-pi/issues/206"],
        fix: "sake drops the `format` (the model then sees a plain string).",
        automatic: Automatic::Always,
    },
    Rule {
        id: "openai.default",
        profiles: &[OpenAiStrict],
        level: Level::Warning,
        summary: "`default` is not part of the subset; Azure OpenAI refuses it in strict mode.",
        sources: &["https://github.com/openai/openai-agents-python/issues/4390"],
        fix: "sake drops the `default`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "openai.limits",
        profiles: &[OpenAiStrict],
        level: Level::Error,
        summary: "At most 5000 properties and 10 levels of object nesting; at most 120,000 characters of property names, definition names, enum and const values; at most 1000 enum values, and 15,000 characters for one string enum of more than 250 values.",
        sources: &[
            "https://platform.openai.com/docs/guides/structured-outputs#objects-have-limitations-on-nesting-depth-and-size",
        ],
        fix: "Split the tool, or flatten its argument types.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "openai.name",
        profiles: &[OpenAiStrict],
        level: Level::Warning,
        summary: "A function name must match `^[a-zA-Z0-9_-]{1,64}$` (no dots); clients that pass the tool name through unchanged are refused.",
        sources: &["https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools"],
        fix: "Rename the tool (`#[tool(name = \"...\")]`) with letters, digits, `_` and `-` only.",
        automatic: Automatic::Never,
    },
    // -----------------------------------------------------------------------------------------
    // Gemini function declarations (`parameters`, the v1beta Schema object)
    Rule {
        id: "gemini.type-array",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "`type` must be a single type name; `[\"T\", \"null\"]` is written `\"type\": \"T\", \"nullable\": true`.",
        sources: &[
            GEMINI_SCHEMA,
            "https://github.com/n8n-io/n8n/issues/15553",
            "https://github.com/zed-industries/zed/issues/44875",
        ],
        fix: "sake writes `nullable: true` for a `null` member, and an `anyOf` of single types for the rest (unless the subschema has an `anyOf` already).",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "gemini.type",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "Every subschema needs a `type` (or an `anyOf` whose branches have one); Gemini CLI skips a tool with \"missing types in its parameter schema\".",
        sources: &[
            GEMINI_SCHEMA,
            "https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/tools/mcp-client.ts (hasValidTypes)",
            "https://github.com/arben-adm/mcp-sequential-thinking/issues/12",
        ],
        fix: "sake infers the type of an `enum`/`const` of one JSON type; a `serde_json::Value` parameter must become a concrete type.",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "gemini.ref",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "No `$ref` or `$defs`: the Schema object has neither.",
        sources: &[
            GEMINI_SCHEMA,
            "https://github.com/google-gemini/gemini-cli/issues/13326",
            "https://github.com/anomalyco/opencode/issues/12295",
        ],
        fix: "sake inlines every `$ref` that does not recurse; a recursive type must be bounded (a fixed depth of nesting).",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "gemini.keyword",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "Only the Schema object's fields are accepted (type, format, title, description, nullable, enum, items, minItems, maxItems, properties, required, minProperties, maxProperties, minimum, maximum, minLength, maxLength, pattern, example, anyOf, propertyOrdering, default); any other name is \"Unknown name … Cannot find field\".",
        sources: &[
            GEMINI_SCHEMA,
            "https://github.com/promptfoo/promptfoo/issues/6902",
            "https://github.com/symfony/ai/issues/2037",
            "https://github.com/zed-industries/zed/issues/45552",
            "https://github.com/zendev-sh/zenflow/issues/14",
        ],
        fix: "sake rewrites `oneOf` as `anyOf`, a string `const` as a one-value `enum`, an integer `exclusiveMinimum`/`exclusiveMaximum` as `minimum`/`maximum`, and drops `additionalProperties: false`, `$schema` and other annotations; maps, tuples, composition and conditions must be restructured.",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "gemini.enum",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "`enum` is only allowed for `\"type\": \"string\"`.",
        sources: &[
            GEMINI_SCHEMA,
            "https://github.com/musistudio/claude-code-router/issues/475",
            "https://github.com/microsoft/azure-devops-mcp/issues/139",
        ],
        fix: "sake moves a `null` value to `nullable: true`; other values must be strings: a Rust `enum` of unit variants (`#[serde(rename = \"...\")]` for the values).",
        automatic: Automatic::Sometimes,
    },
    Rule {
        id: "gemini.format",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "`format` must be float or double (numbers), int32 or int64 (integers), enum or date-time (strings).",
        sources: &[
            GEMINI_SCHEMA,
            "https://firebase.google.com/docs/reference/js/ai.schemashared",
        ],
        fix: "sake drops the `format`.",
        automatic: Automatic::Always,
    },
    Rule {
        id: "gemini.empty-object",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "An object schema must declare properties (\"properties: should be non-empty for OBJECT type\"): free-form objects cannot be expressed (maps are reported by `gemini.keyword`).",
        sources: &[
            "https://github.com/agno-agi/agno/issues/2112",
            "https://github.com/lobehub/lobehub/pull/5002",
        ],
        fix: "Declare the fields as a struct; a map (`HashMap`, `BTreeMap`, `serde_json::Map`) must become a list of entries.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "gemini.no-parameters",
        profiles: &[Gemini],
        level: Level::Warning,
        summary: "A tool without arguments has an empty object as its `inputSchema`; a client that sends it as `parameters` rather than leaving `parameters` out is refused.",
        sources: &["https://github.com/pipecat-ai/pipecat-flows/issues/110"],
        fix: "Nothing to change in the server: the client must leave `parameters` out for a tool without arguments.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "gemini.array-items",
        profiles: &[Gemini],
        level: Level::Error,
        summary: "An array schema must have `items` (\"items: missing field\").",
        sources: &[
            GEMINI_SCHEMA,
            "https://github.com/DEEIX-AI/DEEIX-Chat/issues/546",
        ],
        fix: "Give the array an element type: a `Vec<T>` of a concrete `T` (a tuple must become a struct).",
        automatic: Automatic::Never,
    },
    Rule {
        id: "gemini.name",
        profiles: &[Gemini],
        level: Level::Warning,
        summary: "A function name must start with a letter or `_`, hold only letters, digits, `_`, `.`, `:` and `-`, and have at most 64 characters.",
        sources: &[
            "https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration",
            "https://github.com/Finerestaurant/kicad-mcp-python/issues/2",
        ],
        fix: "Rename the tool (`#[tool(name = \"...\")]`) to start with a letter.",
        automatic: Automatic::Never,
    },
    // -----------------------------------------------------------------------------------------
    // VS Code (GitHub Copilot Chat)
    Rule {
        id: "vscode.array-items",
        profiles: &[VsCode],
        level: Level::Error,
        summary: "Every `\"type\": \"array\"` needs `items` (a tuple's `prefixItems` is not enough): \"tool parameters array type must have items\".",
        sources: &[
            "https://github.com/microsoft/vscode/issues/246119",
            "https://github.com/microsoft/vscode/issues/284536",
            COPILOT_NORMALIZER,
        ],
        fix: "sake adds `items` (for a tuple, an `anyOf` of its element schemas when `maxItems` bounds it, else `{}`).",
        automatic: Automatic::Always,
    },
    Rule {
        id: "vscode.draft-07",
        profiles: &[VsCode],
        level: Level::Error,
        summary: "The schema must validate against the draft-07 meta-schema (Copilot Chat checks it with Ajv): \"tool parameters do not match JSON schema\".",
        sources: &[COPILOT_NORMALIZER, "http://json-schema.org/draft-07/schema"],
        fix: "Correct the keyword's value in the custom schema.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "vscode.dynamic-ref",
        profiles: &[VsCode],
        level: Level::Error,
        summary: "VS Code's JSON validator does not support `$dynamicRef`/`$dynamicAnchor`/`$recursiveRef`/`$recursiveAnchor` and omits the tool.",
        sources: &[
            "https://github.com/microsoft/vscode-json-languageservice/issues/323",
            "https://github.com/microsoft/vscode/issues/318984",
        ],
        fix: "Use a plain `$ref` to a `$defs` entry.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "vscode.schema-uri",
        profiles: &[VsCode],
        level: Level::Warning,
        summary: "A `$schema` naming 2020-12 made VS Code omit the tool (\"meta-schema features ($dynamicRef) that are not yet supported\").",
        sources: &[
            "https://github.com/microsoft/vscode/issues/251315",
            "https://github.com/metoro-io/mcp-golang/issues/119",
        ],
        fix: "sake drops the `$schema` (2020-12 is MCP's default dialect, so nothing changes).",
        automatic: Automatic::Always,
    },
    Rule {
        id: "vscode.top-level-composition",
        profiles: &[VsCode],
        level: Level::Warning,
        summary: "Copilot Chat removes `oneOf`, `anyOf`, `allOf`, `not`, `if`, `then` and `else` from the root before the model sees the schema: the constraint is lost.",
        sources: &[COPILOT_NORMALIZER],
        fix: "Move the constraint into a property, or check it in the function and answer with a tool error.",
        automatic: Automatic::Never,
    },
    Rule {
        id: "vscode.required-undefined",
        profiles: &[VsCode],
        level: Level::Warning,
        summary: "Copilot Chat removes names from `required` that `properties` does not declare.",
        sources: &[COPILOT_NORMALIZER],
        fix: "sake removes them too.",
        automatic: Automatic::Always,
    },
];
