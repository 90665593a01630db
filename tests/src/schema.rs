//! The official JSON Schemas of the four revisions (`spec/<revision>/schema.json`, copied from
//! modelcontextprotocol/modelcontextprotocol) and of the tasks extension
//! (`spec/ext-tasks/schema.json`; see `spec/README.md`), and [`validate`], which
//! checks one message a server sent against them: the envelope, the result definition of the
//! method that was called (`tools/list` → `ListToolsResult`, …), the error definition of the
//! code where the schema has one (`-32020` → `HeaderMismatchError`, …), and each
//! notification's definition.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

use crate::http::MODERN;

/// Where a revision's official schema is: `spec/<revision>/schema.json` of this package.
pub fn path(revision: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "spec", revision, "schema.json"]
        .iter()
        .collect()
}

/// A revision's official schema document, read once per test binary.
pub fn document(revision: &str) -> &'static Value {
    static DOCUMENTS: OnceLock<Mutex<HashMap<String, &'static Value>>> = OnceLock::new();
    let mut map = DOCUMENTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(revision.to_owned()).or_insert_with(|| {
        let path = path(revision);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let root: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Box::leak(Box::new(root))
    })
}

/// One revision's schema and what it says about messages.
struct Schema {
    root: Value,
    /// `properties.method.const` → definition name, for requests and notifications.
    by_method: HashMap<String, String>,
    /// `error.code` const → definition of the whole error response.
    by_code: HashMap<i64, String>,
    /// `code` const → definition of the error object (`ParseError`, `InvalidParamsError`, …).
    by_error_code: HashMap<i64, String>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Schema {
    fn load(revision: &str) -> Schema {
        let root = document(revision).clone();
        let mut by_method = HashMap::new();
        let mut by_code = HashMap::new();
        let mut by_error_code = HashMap::new();
        for (name, def) in Schema::defs_of(&root) {
            if let Some(m) = def
                .pointer("/properties/method/const")
                .and_then(Value::as_str)
            {
                by_method.insert(m.to_owned(), name.clone());
            }
            if let Some(c) = def
                .pointer("/properties/code/const")
                .and_then(Value::as_i64)
            {
                by_error_code.insert(c, name.clone());
            }
            if let Some(all) = def
                .pointer("/properties/error/allOf")
                .and_then(Value::as_array)
            {
                for part in all {
                    if let Some(c) = part
                        .pointer("/properties/code/const")
                        .and_then(Value::as_i64)
                    {
                        by_code.insert(c, name.clone());
                    }
                }
            }
        }
        Schema {
            root,
            by_method,
            by_code,
            by_error_code,
            validators: Mutex::new(HashMap::new()),
        }
    }

    fn defs_key(root: &Value) -> &'static str {
        if root.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        }
    }

    fn defs_of(root: &Value) -> &Map<String, Value> {
        root[Schema::defs_key(root)].as_object().unwrap()
    }

    /// Whether a definition lists `id` as required.
    fn requires_id(&self, def: &str) -> bool {
        Schema::defs_of(&self.root)[def]["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|k| k == "id"))
    }

    fn has(&self, def: &str) -> bool {
        Schema::defs_of(&self.root).contains_key(def)
    }

    /// The compiled validator of one definition, compiled on first use.
    fn validator(&self, def: &str) -> Arc<jsonschema::Validator> {
        let mut cache = self.validators.lock().unwrap();
        if let Some(v) = cache.get(def) {
            return v.clone();
        }
        assert!(self.has(def), "the schema has no definition {def}");
        let key = Schema::defs_key(&self.root);
        let wrapper = json!({
            "$schema": self.root["$schema"],
            "$ref": format!("#/{key}/{def}"),
            key: self.root[key],
        });
        let v = Arc::new(
            jsonschema::options()
                .should_validate_formats(true)
                .build(&wrapper)
                .unwrap_or_else(|e| panic!("compiling {def}: {e}")),
        );
        cache.insert(def.to_owned(), v.clone());
        v
    }

    fn check(&self, revision: &str, def: &str, instance: &Value, message: &Value) {
        let v = self.validator(def);
        let errors: Vec<String> = v
            .iter_errors(instance)
            .map(|e| format!("  {}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "message violates {def} of the {revision} schema:\n{}\nmessage: {message}",
            errors.join("\n")
        );
    }
}

fn schema(revision: &str) -> &'static Schema {
    static SCHEMAS: OnceLock<Mutex<HashMap<String, &'static Schema>>> = OnceLock::new();
    let mut map = SCHEMAS.get_or_init(Default::default).lock().unwrap();
    map.entry(revision.to_owned())
        .or_insert_with(|| Box::leak(Box::new(Schema::load(revision))))
}

/// The schema of the tasks extension (`spec/ext-tasks/schema.json`): its messages are not in
/// the revision's.
pub const TASKS_EXT: &str = "ext-tasks";

/// Validates a message of the tasks extension (2026-07-28): `notifications/tasks`, a
/// `CreateTaskResult` (`resultType: "task"`), the results of `tasks/get`, `tasks/update` and
/// `tasks/cancel` — the envelope against the revision's schema, the rest against the
/// extension's. `false` for any other message.
fn validate_task_message(request_method: Option<&str>, message: &Value) -> bool {
    let core = schema(MODERN);
    let ext = schema(TASKS_EXT);
    if message.get("method").and_then(Value::as_str) == Some("notifications/tasks") {
        core.check(MODERN, "JSONRPCNotification", message, message);
        ext.check(TASKS_EXT, "TaskStatusNotification", message, message);
        return true;
    }
    let Some(result) = message.get("result") else {
        return false;
    };
    let def = if result.get("resultType").and_then(Value::as_str) == Some("task") {
        assert_eq!(
            request_method,
            Some("tools/call"),
            "only tools/call may be answered with a task: {message}"
        );
        "CreateTaskResult"
    } else {
        match request_method {
            Some("tasks/get") => "GetTaskResult",
            Some("tasks/update") => "UpdateTaskResult",
            Some("tasks/cancel") => "CancelTaskResult",
            _ => return false,
        }
    };
    core.check(MODERN, "JSONRPCResultResponse", message, message);
    ext.check(TASKS_EXT, def, result, message);
    // A completed task's result is exactly what the request would have returned.
    if def == "GetTaskResult"
        && let Some(inner) = result.get("result")
    {
        core.check(MODERN, "CallToolResult", inner, message);
    }
    true
}

/// Validates a result of the skills extension (2026-07-28; the extension publishes no JSON
/// Schema): the envelope and `Result` against the revision's schema, each child of a
/// `resources/directory/read` against `Resource`, and the entries' shape as the extension's
/// `Skill` type says. `false` for any other message.
fn validate_skills_message(request_method: Option<&str>, message: &Value) -> bool {
    let Some(method @ ("skills/list" | "skills/get" | "resources/directory/read")) = request_method
    else {
        return false;
    };
    let Some(result) = message.get("result") else {
        return false;
    };
    let core = schema(MODERN);
    core.check(MODERN, "JSONRPCResultResponse", message, message);
    core.check(MODERN, "Result", result, message);
    assert_eq!(result["resultType"], "complete", "{message}");
    let entry = |skill: &Value| {
        assert!(
            skill["uri"]
                .as_str()
                .is_some_and(|u| u.ends_with("/SKILL.md")),
            "{skill}"
        );
        assert!(skill["frontmatter"]["name"].is_string(), "{skill}");
        assert!(skill["frontmatter"]["description"].is_string(), "{skill}");
        match &skill["resources"] {
            Value::String(s) => assert_eq!(s, "dynamic"),
            Value::Array(files) => {
                for f in files {
                    let digest = f["digest"].as_str().unwrap_or_default();
                    assert!(
                        digest.len() == 71
                            && digest.starts_with("sha256:")
                            && digest[7..]
                                .bytes()
                                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                        "{f}"
                    );
                    assert!(f["size"].is_u64() && f["uri"].is_string(), "{f}");
                }
            }
            other => panic!("resources is {other}"),
        }
    };
    match method {
        "skills/list" => {
            assert!(
                result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
                "{message}"
            );
            result["skills"]
                .as_array()
                .expect("skills")
                .iter()
                .for_each(entry);
        }
        "skills/get" => {
            assert!(
                result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
                "{message}"
            );
            assert!(result.get("nextCursor").is_none(), "{message}");
            entry(&result["skill"]);
        }
        _ => {
            for r in result["resources"].as_array().expect("resources") {
                core.check(MODERN, "Resource", r, message);
            }
        }
    }
    true
}

/// Validates one message the server sent in answer to a request of `request_method`.
pub fn validate(revision: &str, request_method: Option<&str>, message: &Value) {
    let s = schema(revision);
    let modern = revision == MODERN;
    if modern && validate_task_message(request_method, message) {
        return;
    }
    if modern && validate_skills_message(request_method, message) {
        return;
    }
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        assert!(
            message.get("id").is_none() || !modern,
            "a 2026-07-28 server sent a JSON-RPC request: {message}"
        );
        let generic = if message.get("id").is_some() {
            "JSONRPCRequest"
        } else {
            "JSONRPCNotification"
        };
        s.check(revision, generic, message, message);
        let def = s
            .by_method
            .get(method)
            .unwrap_or_else(|| panic!("{revision} defines no message {method:?}: {message}"));
        s.check(revision, def, message, message);
    } else if let Some(error) = message.get("error") {
        let envelope = if s.has("JSONRPCErrorResponse") {
            "JSONRPCErrorResponse"
        } else {
            "JSONRPCError"
        };
        if message.get("id").is_none() && s.requires_id(envelope) {
            // 2025-03-26 and 2025-06-18 require an id in their schema, while their
            // Streamable HTTP transport lets the body of a refused POST (or GET, DELETE) be
            // "a JSON-RPC error response that has no id": check everything else.
            let mut with_id = message.clone();
            with_id["id"] = json!("(none)");
            s.check(revision, envelope, &with_id, message);
        } else {
            s.check(revision, envelope, message, message);
        }
        let code = error["code"].as_i64();
        if let Some(def) = code.and_then(|c| s.by_code.get(&c)) {
            s.check(revision, def, message, message);
        }
        if let Some(def) = code.and_then(|c| s.by_error_code.get(&c)) {
            s.check(revision, def, error, message);
        }
    } else if let Some(result) = message.get("result") {
        let envelope = if s.has("JSONRPCResultResponse") {
            "JSONRPCResultResponse"
        } else {
            "JSONRPCResponse"
        };
        s.check(revision, envelope, message, message);
        let method = request_method.expect("a result answers a request");
        let def = if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            "InputRequiredResult".to_owned()
        } else {
            let request = s
                .by_method
                .get(method)
                .unwrap_or_else(|| panic!("{revision} defines no request {method:?}"));
            let result_def = request.replace("Request", "Result");
            if s.has(&result_def) {
                result_def
            } else {
                "Result".to_owned()
            }
        };
        s.check(revision, &def, result, message);
    } else {
        panic!("not a JSON-RPC message: {message}");
    }
}
