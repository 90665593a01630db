//! The schema compatibility reports of the quickstart's tools, per client profile (snapshots), the
//! start-up check and the served normalisation of the `Server` builder, and the checker's
//! meta-schema rules against a real JSON Schema validator.
//!
//! A snapshot that looks wrong is fixed in `sake-runtime/src/schema/compat/`, never by hand.

#[path = "../../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;

use std::sync::{Arc, Mutex};

use sake::compat::{self, Part, Profile, Severity};
use sake::registry::{PromptDef, ResourceDef, ToolDef};
use sake::testing::TestClient;
use sake::{Registry, Revision, Server};
use serde_json::{Value, json};

/// What one example file registers.
fn from_file(file: &str) -> Registry {
    Registry::from_defs(
        inventory::iter::<ToolDef>().filter(|d| d.location.file.ends_with(file)),
        inventory::iter::<PromptDef>().filter(|d| d.location.file.ends_with(file)),
        inventory::iter::<ResourceDef>().filter(|d| d.location.file.ends_with(file)),
    )
    .unwrap()
}

#[test]
fn reports_of_the_examples() {
    // The conformance fixture's are in tests/tests/schema_compat_everything.rs: it has a `greet`
    // too, and the quickstart's own tests serve every tool of their binary.
    let registry = from_file("examples/quickstart.rs");
    for profile in Profile::ALL {
        let report = compat::check_registry(&registry, profile);
        insta::assert_json_snapshot!(format!("quickstart_{}", profile.id()), report);
    }
}

#[test]
fn a_report_reads_well() {
    let report =
        compat::check_registry(&from_file("examples/quickstart.rs"), Profile::OpenAiStrict);
    insta::assert_snapshot!("quickstart_openai-strict_text", report.to_string());
}

#[test]
fn normalised_quickstart_tools() {
    let registry = from_file("examples/quickstart.rs");
    let tools: Vec<sake::Tool> =
        serde_json::from_value(Value::Array(registry.tools_for(Revision::V2026_07_28))).unwrap();
    for profile in Profile::ALL {
        let fixed: Vec<Value> = tools
            .iter()
            .map(|t| serde_json::to_value(compat::normalize_tool(profile, t)).unwrap())
            .collect();
        insta::assert_json_snapshot!(format!("quickstart_normalized_{}", profile.id()), fixed);
        // What is left needs the author.
        for t in &fixed {
            let tool: sake::Tool = serde_json::from_value(t.clone()).unwrap();
            let left = compat::check_tool(profile, &tool);
            assert!(
                left.iter().all(|f| !f.fix.automatic),
                "{profile:?}: {left:#?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The builder

/// Log lines written while `f` runs.
fn logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::WARN)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

#[test]
fn the_start_up_check_warns_once_per_finding() {
    let registry = from_file("examples/quickstart.rs");
    let expected = compat::check_registry(&registry, Profile::OpenAiStrict)
        .findings
        .len()
        + compat::check_registry(&registry, Profile::VsCode)
            .findings
            .len();
    let (built, text) = logs(|| {
        Server::with_registry(registry)
            .check_schemas([Profile::OpenAiStrict, Profile::VsCode], Severity::Warn)
            .build()
    });
    assert!(built.is_ok());
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("rule=")).collect();
    assert_eq!(lines.len(), expected, "{text}");
    assert_eq!(expected, 4, "{text}");
    assert!(
        lines[0].contains(
            "OpenAI strict function calling: error [openai.additional-properties] tool `add` inputSchema at \"\""
        ),
        "{text}"
    );
    assert!(lines[0].contains("profile=\"openai-strict\""), "{text}");
    assert!(lines[0].contains("tool=add"), "{text}");
}

#[test]
fn the_start_up_check_can_refuse_to_start() {
    let refused = Server::with_registry(from_file("examples/quickstart.rs"))
        .check_schemas([Profile::OpenAiStrict], Severity::Deny)
        .build();
    let Err(sake::Error::IncompatibleSchemas(reports)) = refused else {
        panic!("started: {:?}", refused.map(|_| ()));
    };
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0]
            .findings
            .iter()
            .all(|f| f.level == compat::Level::Error)
    );
    insta::assert_snapshot!(
        "quickstart_refused",
        sake::Error::IncompatibleSchemas(reports).to_string()
    );
    // Warnings alone never stop a server; a clean profile neither.
    Server::with_registry(from_file("examples/quickstart.rs"))
        .check_schemas([Profile::JsonSchema2020], Severity::Deny)
        .build()
        .unwrap();
}

#[test]
fn normalising_refuses_nothing_it_can_fix() {
    // Normalised for OpenAI strict, the quickstart has nothing left that strict mode refuses.
    Server::with_registry(from_file("examples/quickstart.rs"))
        .normalize_schemas([Profile::OpenAiStrict])
        .check_schemas([Profile::OpenAiStrict], Severity::Deny)
        .build()
        .unwrap();
}

#[tokio::test]
async fn served_lists_change_only_when_asked() {
    let as_written =
        TestClient::new(Server::with_registry(from_file("examples/quickstart.rs"))).unwrap();
    let listed = as_written.list_tools().await.unwrap();
    let greet = |list: &Value| {
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "greet")
            .unwrap()["inputSchema"]
            .clone()
    };
    let original = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet."},
            "shout": {"type": "boolean", "description": "Shout the greeting."}
        },
        "required": ["name"]
    });
    assert_eq!(greet(&listed), original);
    // Checking alone changes nothing.
    let checked = TestClient::new(
        Server::with_registry(from_file("examples/quickstart.rs"))
            .check_schemas(Profile::ALL, Severity::Warn),
    )
    .unwrap();
    assert_eq!(greet(&checked.list_tools().await.unwrap()), original);

    let strict = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet."},
            "shout": {"type": ["boolean", "null"], "description": "Shout the greeting."}
        },
        "required": ["name", "shout"],
        "additionalProperties": false
    });
    let server = || {
        Server::with_registry(from_file("examples/quickstart.rs"))
            .normalize_schemas([Profile::OpenAiStrict])
    };
    let modern = TestClient::new(server()).unwrap();
    assert_eq!(greet(&modern.list_tools().await.unwrap()), strict);
    let legacy = TestClient::new(server())
        .unwrap()
        .revision(Revision::V2025_06_18);
    assert_eq!(greet(&legacy.list_tools().await.unwrap()), strict);
    // The model may now send `null` for the optional argument: `Option<bool>` reads it as `None`.
    let r = modern
        .call_tool("greet", json!({"name": "Ada", "shout": null}))
        .await
        .unwrap();
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "Hello, Ada!"}])
    );
}

// ---------------------------------------------------------------------------------------------
// The meta-schema rules against a validator

/// Schemas whose keyword values the 2020-12 meta-schema refuses, or accepts.
fn meta_cases() -> Vec<Value> {
    vec![
        json!({"type": "object", "properties": {"a": {"type": "int"}}}),
        json!({"type": ["string", "string"]}),
        json!({"type": []}),
        json!({"required": ["a", "a"]}),
        json!({"required": [1]}),
        json!({"properties": {"a": 1}}),
        json!({"properties": []}),
        json!({"anyOf": []}),
        json!({"allOf": [{}, 2]}),
        json!({"items": [{"type": "string"}]}),
        json!({"items": 3}),
        json!({"prefixItems": []}),
        json!({"minLength": -1}),
        json!({"minLength": 1.5}),
        json!({"maxItems": "3"}),
        json!({"multipleOf": 0}),
        json!({"minimum": "0"}),
        json!({"exclusiveMinimum": true}),
        json!({"uniqueItems": 1}),
        json!({"enum": {}}),
        json!({"const": {}, "default": [1], "examples": []}),
        json!({"$defs": {"a": {"type": "string"}, "b": true}}),
        json!({"$defs": {"a": 1}}),
        json!({"$anchor": "9a"}),
        json!({"$anchor": "ok-name"}),
        json!({"$id": "urn:x#frag"}),
        json!({"$id": "urn:x#"}),
        json!({"dependentRequired": {"a": ["b", "b"]}}),
        json!({"dependentRequired": {"a": ["b"]}}),
        json!({"dependencies": {"a": 1}}),
        json!({"dependencies": {"a": ["b"], "c": {}}}),
        json!({"$vocabulary": {"https://example.com": 1}}),
        json!({"description": 1, "title": "t"}),
        json!({"deprecated": "no"}),
        json!({"contentSchema": 1}),
        json!({"minContains": 2, "maxContains": 1.0}),
        json!({"type": "object", "properties": {"deep": {"type": "array", "items": {"minimum": "x"}}}}),
        json!({"x-custom": {"type": "nonsense"}}),
    ]
}

#[test]
fn meta_rules_agree_with_a_validator() {
    for case in meta_cases() {
        let validator_says = jsonschema::draft202012::meta::validate(&case).is_ok();
        let found = compat::check(Profile::JsonSchema2020, Part::OutputSchema, &case);
        // `items` as an array is reported by its own rule, which the meta-schema also refuses.
        let sake_says = !found.iter().any(|f| {
            matches!(
                f.rule,
                "json-schema.meta" | "json-schema.tuple-items" | "json-schema.exclusive-boolean"
            )
        });
        assert_eq!(sake_says, validator_says, "{case}: {found:#?}");
    }
}

/// `docs/schema-compatibility.md` lists every rule with its sources, and no rule the code lacks.
#[test]
fn the_documentation_lists_every_rule() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/schema-compatibility.md"
    ))
    .unwrap();
    let documented: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(id, _)| id))
        .filter(|id| id.contains('.'))
        .collect();
    let mut ids: Vec<&str> = compat::rules(None).map(|r| r.id).collect();
    let mut listed = documented.clone();
    ids.sort_unstable();
    listed.sort_unstable();
    assert_eq!(listed, ids);
    for rule in compat::rules(None) {
        for source in rule.sources {
            let url = source.split(' ').next().unwrap();
            assert!(doc.contains(&format!("]({url})")), "{}: {url}", rule.id);
        }
    }
}
