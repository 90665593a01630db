//! Snapshots of the schemas `#[tool]` generates, for one tool per signature shape.
//!
//! Every listed tool is also checked against the rules sake promises (`schema::violations`,
//! object input schemas), against the JSON Schema 2020-12 meta-schema, and against the `Tool`
//! definition of each revision's official schema (`spec/`, through `sake_tests::schema`).
//!
//! A snapshot that looks wrong is fixed in `sake-runtime/src/schema/mod.rs`, never by hand.

// The argument types are only deserialized, never read.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sake::Revision;
use sake::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Primitives

/// Takes a bool.
#[tool]
fn flag(
    /// Whether it is on.
    on: bool,
) -> String {
    on.to_string()
}

/// Takes an i32.
#[tool]
fn int32(n: i32) -> String {
    n.to_string()
}

/// Takes a u64 and a u8.
#[tool]
fn unsigned(big: u64, small: u8) -> String {
    format!("{big} {small}")
}

/// Integers of other widths.
#[tool]
fn integers(huge: u128, positive: std::num::NonZeroU32, tiny: i8) -> String {
    format!("{huge} {positive} {tiny}")
}

/// Takes an f64.
#[tool]
fn float64(x: f64) -> String {
    x.to_string()
}

/// Takes a String.
#[tool]
fn text(s: String) -> String {
    s
}

/// Takes a char.
#[tool]
fn letter(c: char) -> String {
    c.to_string()
}

// ---------------------------------------------------------------------------------------------
// Containers

/// Optional scalars: absent from `required`, no null union.
#[tool]
fn optional_scalars(limit: Option<u32>, label: Option<String>, ratio: Option<f64>) -> String {
    format!("{limit:?} {label:?} {ratio:?}")
}

/// Sequences and sets.
#[tool]
fn sequences(
    items: Vec<String>,
    counts: Vec<u8>,
    tags: BTreeSet<String>,
    sparse: Vec<Option<i32>>,
) -> String {
    format!("{items:?} {counts:?} {tags:?} {sparse:?}")
}

/// Fixed-size arrays and tuples.
#[tool]
fn fixed(point: [f64; 3], pair: (i32, String)) -> String {
    format!("{point:?} {pair:?}")
}

/// Maps: string keys, number keys, enum keys.
#[tool]
fn maps(
    hash: HashMap<String, i64>,
    ordered: BTreeMap<String, Vec<String>>,
    by_number: HashMap<u32, String>,
    by_color: HashMap<Color, i32>,
) -> String {
    format!(
        "{} {} {} {}",
        hash.len(),
        ordered.len(),
        by_number.len(),
        by_color.len()
    )
}

// ---------------------------------------------------------------------------------------------
// User types

/// A postal address.
#[derive(Deserialize, JsonSchema)]
struct Address {
    /// Street and number.
    street: String,
    /// The city.
    city: City,
}

/// A city.
#[derive(Deserialize, JsonSchema)]
struct City {
    /// Its name.
    name: String,
    /// ISO 3166-1 alpha-2 code, if known.
    country: Option<String>,
}

/// Nested user structs, required and optional.
#[tool]
fn nested(
    /// Where to ship.
    ship_to: Address,
    /// Where to bill, if not the shipping address.
    bill_to: Option<Address>,
) -> String {
    format!("{} {}", ship_to.street, bill_to.is_some())
}

/// A colour.
#[derive(Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
    Blue,
}

/// A unit enum, required and optional.
#[tool]
fn unit_enum(color: Color, fallback: Option<Color>) -> String {
    let name = |c: &Color| match c {
        Color::Red => "red",
        Color::Green => "green",
        Color::Blue => "blue",
    };
    format!("{} {:?}", name(&color), fallback.as_ref().map(name))
}

/// A shape, tagged by `kind`.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    /// A circle.
    Circle { radius: f64 },
    /// A rectangle.
    Rectangle { width: f64, height: f64 },
    /// A point.
    Point,
}

/// An internally tagged enum.
#[tool]
fn internally_tagged(shape: Shape) -> String {
    match shape {
        Shape::Circle { radius } => format!("circle {radius}"),
        Shape::Rectangle { width, height } => format!("rectangle {width}x{height}"),
        Shape::Point => "point".to_owned(),
    }
}

/// A stack operation.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op", content = "args", rename_all = "camelCase")]
enum StackOp {
    Push(i64),
    PushMany(Vec<i64>),
    Pop,
}

/// An adjacently tagged enum.
#[tool]
fn adjacently_tagged(op: StackOp) -> String {
    match op {
        StackOp::Push(n) => format!("push {n}"),
        StackOp::PushMany(ns) => format!("push {ns:?}"),
        StackOp::Pop => "pop".to_owned(),
    }
}

/// An id: a number or a name.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Id {
    Number(u64),
    Name(String),
}

/// An untagged enum.
#[tool]
fn untagged(id: Id) -> String {
    match id {
        Id::Number(n) => n.to_string(),
        Id::Name(s) => s,
    }
}

/// Something that happened.
#[derive(Deserialize, JsonSchema)]
enum Event {
    Click { x: i32, y: i32 },
    Key(char),
    Quit,
}

/// An externally tagged enum (serde's default).
#[tool]
fn externally_tagged(event: Event) -> String {
    match event {
        Event::Click { x, y } => format!("click {x},{y}"),
        Event::Key(c) => format!("key {c}"),
        Event::Quit => "quit".to_owned(),
    }
}

/// A tree of numbers.
#[derive(Deserialize, JsonSchema)]
struct TreeNode {
    value: i32,
    children: Vec<TreeNode>,
}

/// A recursive type keeps its `$defs`.
#[tool]
fn tree(root: TreeNode, forest: Vec<TreeNode>) -> String {
    fn sum(n: &TreeNode) -> i64 {
        i64::from(n.value) + n.children.iter().map(sum).sum::<i64>()
    }
    (sum(&root) + forest.iter().map(sum).sum::<i64>()).to_string()
}

/// Optional composite types lose their `null` branch too.
#[tool]
#[allow(clippy::too_many_arguments)]
fn optional_composites(
    shape: Option<Shape>,
    id: Option<Id>,
    event: Option<Event>,
    op: Option<StackOp>,
    node: Option<TreeNode>,
    bytes: Option<Vec<u8>>,
    pair: Option<(i32, i32)>,
    day: Option<IsoDate>,
    path: Option<std::path::PathBuf>,
) -> String {
    let given = [
        shape.is_some(),
        id.is_some(),
        event.is_some(),
        op.is_some(),
        node.is_some(),
        bytes.is_some(),
        pair.is_some(),
        day.is_some(),
        path.is_some(),
    ];
    given.iter().filter(|g| **g).count().to_string()
}

/// Retry settings.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RetrySettings {
    max_retries: u32,
    retry_delay_ms: Option<u64>,
}

/// Serde renames: `rename_all` on a struct, `rename` on parameters.
#[tool]
fn renames(
    settings: RetrySettings,
    #[serde(rename = "type")] kind: String,
    #[serde(rename = "user-id")] user_id: u64,
) -> String {
    format!(
        "{} {:?} {kind} {user_id}",
        settings.max_retries, settings.retry_delay_ms
    )
}

/// Paging.
#[derive(Deserialize, JsonSchema)]
#[serde(default)]
struct Paging {
    /// Items per page.
    size: u32,
    /// Items to skip.
    offset: u32,
}

impl Default for Paging {
    fn default() -> Self {
        Paging {
            size: 20,
            offset: 0,
        }
    }
}

/// `#[serde(default)]` on parameters and on a struct.
#[tool]
fn defaults(
    #[serde(default)] verbose: bool,
    #[serde(default)] depth: Option<u8>,
    #[serde(default)] paging: Paging,
) -> String {
    format!("{verbose} {depth:?} {} {}", paging.size, paging.offset)
}

/// `#[serde(flatten)]` on a parameter: its fields become arguments.
#[tool]
fn flattened(query: String, #[serde(flatten)] paging: Paging) -> String {
    format!("{query} {} {}", paging.size, paging.offset)
}

/// A search filter.
///
/// Every field is optional.
#[derive(Deserialize, JsonSchema)]
struct Filter {
    /// Only items with this owner.
    owner: Option<String>,
    /// Only items newer than this many days.
    ///
    /// Zero means today.
    max_age_days: Option<u32>,
}

/// Doc comments on parameters and on struct fields.
#[tool]
fn documented(
    /// The text to search for.
    ///
    /// Case-insensitive.
    query: String,
    /// Narrows the search.
    filter: Filter,
    filter_without_doc: Filter,
) -> String {
    format!(
        "{query} {:?} {:?}",
        filter.owner, filter_without_doc.max_age_days
    )
}

/// A calendar date, `YYYY-MM-DD`, kept as a string.
#[derive(Deserialize)]
struct IsoDate(String);

impl JsonSchema for IsoDate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IsoDate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date"})
    }
}

/// Date-like strings without a date library.
#[tool]
fn dates(
    /// The first day.
    from: IsoDate,
    /// The last day, if not the first.
    until: Option<IsoDate>,
    /// When the request was made (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    at: String,
) -> String {
    format!(
        "{} {} {at}",
        from.0,
        until.map_or_else(String::new, |d| d.0)
    )
}

/// Any JSON, required and optional.
#[tool]
fn any_json(value: Value, extra: Option<Value>) -> String {
    format!("{value} {extra:?}")
}

/// A tool with no parameters.
#[tool]
fn no_params() -> String {
    "nothing to see".to_owned()
}

/// The `Context` parameter is not an argument.
#[tool]
async fn with_context(query: String, ctx: Context) -> String {
    let _ = ctx;
    query
}

/// Every listing option.
#[tool(
    name = "titled.tool-v2",
    title = "A titled tool",
    annotations(
        title = "Annotated title",
        read_only,
        destructive = false,
        idempotent = true,
        open_world = false
    ),
    icon(src = "https://example.com/tool.png", mime_type = "image/png", sizes = ["48x48", "96x96"], theme = "light"),
)]
fn titled() -> String {
    String::new()
}

/// Only a title: on 2025-03-26 it moves into `annotations`.
#[tool(title = "Only a title")]
fn title_only() -> String {
    String::new()
}

// ---------------------------------------------------------------------------------------------
// Outputs

/// A sum.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Structured output: a struct.
#[tool]
fn struct_out(a: i64, b: i64) -> Sum {
    Sum { sum: a + b }
}

/// A report on a file.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Report {
    /// The file's path.
    path: String,
    /// Its size in bytes.
    size_bytes: u64,
    /// Its owner, when known (serialized as `null` otherwise).
    owner: Option<String>,
    /// Its checksum, when computed (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    checksum: Option<String>,
    /// Its kind.
    kind: FileKind,
}

/// A kind of file.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum FileKind {
    Regular,
    Directory,
    Symlink,
}

/// Structured output: `Result<struct, E>`.
#[tool]
async fn result_out(path: String) -> Result<Report, std::io::Error> {
    Ok(Report {
        path,
        size_bytes: 0,
        owner: None,
        checksum: None,
        kind: FileKind::Regular,
    })
}

/// A scalar output: not an object, so only 2026-07-28 lists it.
#[tool]
fn scalar_out(n: i64) -> i64 {
    n * 2
}

/// An array output: not an object either.
#[tool]
fn array_out(n: u32) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

/// An enum output: a string, not an object.
#[tool]
fn enum_out() -> FileKind {
    FileKind::Directory
}

/// Text output of a fallible tool: no output schema.
#[tool]
fn text_result(ok: bool) -> Result<String, String> {
    if ok {
        Ok("fine".to_owned())
    } else {
        Err("not fine".to_owned())
    }
}

/// No output at all.
#[tool]
fn unit_out() {}

// ---------------------------------------------------------------------------------------------
// The checks

/// Every tool of this file, sorted by name, with whether its output schema is an object (or
/// absent), which decides whether the handshake revisions list it.
const TOOLS: &[(&str, bool)] = &[
    ("adjacently_tagged", true),
    ("any_json", true),
    ("array_out", false),
    ("dates", true),
    ("defaults", true),
    ("documented", true),
    ("enum_out", false),
    ("externally_tagged", true),
    ("fixed", true),
    ("flag", true),
    ("flattened", true),
    ("float64", true),
    ("int32", true),
    ("integers", true),
    ("internally_tagged", true),
    ("letter", true),
    ("maps", true),
    ("nested", true),
    ("no_params", true),
    ("optional_composites", true),
    ("optional_scalars", true),
    ("renames", true),
    ("result_out", true),
    ("scalar_out", false),
    ("sequences", true),
    ("struct_out", true),
    ("text", true),
    ("text_result", true),
    ("title_only", true),
    ("titled.tool-v2", true),
    ("tree", true),
    ("unit_enum", true),
    ("unit_out", true),
    ("unsigned", true),
    ("untagged", true),
    ("with_context", true),
];

fn listed(rev: Revision) -> Vec<Value> {
    match sake::testing::tools(rev).unwrap() {
        Value::Array(tools) => tools,
        other => panic!("tools/list is not an array: {other}"),
    }
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// A validator for one definition of a revision's schema: the document is registered under a
/// URI of its own, and the validator's schema is a `$ref` to the definition inside it (under
/// `$defs` from 2025-11-25 on, `definitions` in the draft-07 documents before).
fn definition_validator(rev: &str, definition: &str) -> jsonschema::Validator {
    let doc = sake_tests::schema::document(rev).clone();
    let defs = if doc.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    let uri = format!("urn:sake:spec:{rev}");
    let registry = jsonschema::Registry::new()
        .add(uri.as_str(), doc)
        .unwrap()
        .prepare()
        .unwrap();
    jsonschema::options()
        .with_registry(&registry)
        .build(&json!({ "$ref": format!("{uri}#/{defs}/{definition}") }))
        .unwrap()
}

fn assert_valid_tools(rev: Revision, spec_dir: &str, tools: &[Value]) {
    let validator = definition_validator(spec_dir, "Tool");
    for tool in tools {
        let errors: Vec<String> = validator
            .iter_errors(tool)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{rev:?}: tool {} is not a valid Tool: {errors:#?}\n{tool:#}",
            tool["name"]
        );
    }
}

fn assert_good_schema(tool: &str, which: &str, schema: &Value) {
    assert_eq!(
        sake::testing::schema_violations(schema),
        Vec::<String>::new(),
        "{tool}: {which}: {schema:#}"
    );
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        panic!("{tool}: {which} is not a valid JSON Schema 2020-12: {e}\n{schema:#}");
    }
    // Whatever compiles as a schema must also be usable by a validator.
    jsonschema::draft202012::new(schema)
        .unwrap_or_else(|e| panic!("{tool}: {which} does not compile: {e}\n{schema:#}"));
}

#[test]
fn every_shape_is_listed_on_2026_07_28() {
    let tools = listed(Revision::V2026_07_28);
    let expected: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names(&tools), expected);
    assert!(tools.len() >= 25);
}

#[test]
fn every_schema_follows_the_rules() {
    for tool in listed(Revision::V2026_07_28) {
        let name = tool["name"].as_str().unwrap();
        let input = &tool["inputSchema"];
        assert_eq!(input["type"], "object", "{name}: {input:#}");
        assert!(input["properties"].is_object(), "{name}: {input:#}");
        assert_good_schema(name, "inputSchema", input);
        if let Some(output) = tool.get("outputSchema") {
            assert_good_schema(name, "outputSchema", output);
        }
    }
}

#[test]
fn every_listing_is_a_valid_tool_of_its_revision() {
    for (rev, dir) in [
        (Revision::V2026_07_28, "2026-07-28"),
        (Revision::V2025_11_25, "2025-11-25"),
        (Revision::V2025_06_18, "2025-06-18"),
        (Revision::V2025_03_26, "2025-03-26"),
    ] {
        assert_valid_tools(rev, dir, &listed(rev));
    }
}

#[test]
fn the_spec_validator_rejects_a_bad_tool() {
    let validator = definition_validator("2026-07-28", "Tool");
    assert!(validator.is_valid(&json!({"name": "ok", "inputSchema": {"type": "object"}})));
    assert!(!validator.is_valid(&json!({"name": "no schema"})));
    assert!(!validator.is_valid(&json!({"name": 1, "inputSchema": {"type": "object"}})));
}

#[test]
fn snapshots_2026_07_28_one_per_tool() {
    for tool in listed(Revision::V2026_07_28) {
        let name = tool["name"].as_str().unwrap().replace('.', "_");
        insta::assert_json_snapshot!(format!("tool_{name}"), tool);
    }
}

#[test]
fn handshake_revisions_leave_out_non_object_outputs() {
    let expected: Vec<&str> = TOOLS
        .iter()
        .filter(|(_, object)| *object)
        .map(|(n, _)| *n)
        .collect();
    for rev in [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ] {
        assert_eq!(names(&listed(rev)), expected, "{rev:?}");
    }
}

#[test]
fn snapshot_2025_06_18() {
    insta::assert_json_snapshot!("list_2025_06_18", listed(Revision::V2025_06_18));
}

#[test]
fn snapshot_2025_03_26() {
    let tools = listed(Revision::V2025_03_26);
    for tool in &tools {
        assert!(tool.get("title").is_none(), "{tool:#}");
        assert!(tool.get("outputSchema").is_none(), "{tool:#}");
        assert!(tool.get("icons").is_none(), "{tool:#}");
    }
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap();
    // `title` moves into `annotations`, where an explicit annotation title wins.
    assert_eq!(
        by_name("title_only")["annotations"],
        json!({"title": "Only a title"})
    );
    assert_eq!(
        by_name("titled.tool-v2")["annotations"]["title"],
        "Annotated title"
    );
    insta::assert_json_snapshot!("list_2025_03_26", tools);
}

/// What each client profile finds in the schemas of every shape (see
/// `tests/tests/schema_compat.rs` for the examples' reports and the builder's options).
#[test]
fn compatibility_reports_of_every_shape() {
    for profile in sake::compat::Profile::ALL {
        let report = sake::testing::compatibility(profile).unwrap();
        assert_eq!(report.tools, TOOLS.len());
        insta::assert_json_snapshot!(format!("compat_{}", profile.id()), report);
    }
}

/// Normalising a schema of any shape for a profile leaves only what needs a change of type,
/// and a schema that is still valid JSON Schema 2020-12.
#[test]
fn normalised_schemas_of_every_shape() {
    use sake::compat::{self, Profile};
    for tool in listed(Revision::V2026_07_28) {
        let tool: sake::Tool = serde_json::from_value(tool).unwrap();
        for profile in Profile::ALL {
            let fixed = compat::normalize_tool(profile, &tool);
            let left = compat::check_tool(profile, &fixed);
            assert!(
                left.iter().all(|f| !f.fix.automatic),
                "{} {profile:?}: {left:#?}",
                tool.name
            );
            assert_good_schema_2020(&tool.name, &fixed.input_schema);
        }
    }
}

fn assert_good_schema_2020(tool: &str, schema: &Value) {
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        panic!("{tool}: not a valid JSON Schema 2020-12: {e}\n{schema:#}");
    }
    jsonschema::draft202012::new(schema)
        .unwrap_or_else(|e| panic!("{tool}: does not compile: {e}\n{schema:#}"));
}

#[tokio::test]
async fn the_schemas_describe_what_the_tools_accept_and_return() {
    let client = sake::testing::TestClient::new(Server::from_registry()).unwrap();
    let call = |name: &'static str, args: Value| {
        let client = &client;
        async move { client.call_tool(name, args).await.unwrap() }
    };
    let r = call(
        "renames",
        json!({"settings": {"maxRetries": 3}, "type": "t", "user-id": 7}),
    )
    .await;
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "3 None t 7"}])
    );
    let r = call("defaults", json!({})).await;
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "false None 20 0"}])
    );
    let r = call("flattened", json!({"query": "q", "size": 5})).await;
    assert_eq!(r["content"], json!([{"type": "text", "text": "q 5 0"}]));
    let r = call(
        "adjacently_tagged",
        json!({"op": {"op": "pushMany", "args": [1, 2]}}),
    )
    .await;
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "push [1, 2]"}])
    );
    let r = call(
        "internally_tagged",
        json!({"shape": {"kind": "circle", "radius": 1.5}}),
    )
    .await;
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "circle 1.5"}])
    );
    let r = call("result_out", json!({"path": "/x"})).await;
    assert_eq!(
        r["structuredContent"],
        json!({"path": "/x", "sizeBytes": 0, "owner": null, "kind": "regular"})
    );
    let r = call("scalar_out", json!({"n": 21})).await;
    assert_eq!(r["structuredContent"], json!(42));
    assert_eq!(r["content"], json!([{"type": "text", "text": "42"}]));

    // Each structured result validates against the tool's own output schema.
    let tools = listed(Revision::V2026_07_28);
    for (name, args) in [
        ("result_out", json!({"path": "/x"})),
        ("struct_out", json!({"a": 1, "b": 2})),
        ("scalar_out", json!({"n": 1})),
        ("array_out", json!({"n": 2})),
        ("enum_out", json!({})),
    ] {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        let schema = jsonschema::draft202012::new(&tool["outputSchema"]).unwrap();
        let r = call(name, args).await;
        assert!(
            schema.is_valid(&r["structuredContent"]),
            "{name}: {} does not match {:#}",
            r["structuredContent"],
            tool["outputSchema"]
        );
    }
}
