//! `scopes(...)` and `task = "..."`: carried in the descriptors, not shown in the listings.

use sake::registry::{PromptDef, ResourceDef, TaskSupport, ToolDef};
use sake::prelude::*;

/// Reads a file.
#[tool(scopes("files:read"), task = "optional")]
fn read_file(path: String) -> String {
    path
}

/// Rewrites every file.
#[tool(name = "rewrite", scopes("files:read", "files:write"), task = "required")]
async fn rewrite_all() -> String {
    String::new()
}

/// Explicitly never a task.
#[tool(task = "forbidden")]
fn quick() -> String {
    String::new()
}

/// Neither option.
#[tool]
fn plain() -> String {
    String::new()
}

/// Summarises a file.
#[prompt(scopes("files:read"))]
fn summarise(path: String) -> String {
    path
}

/// A file's contents.
#[resource(uri = "files://{name}", scopes("files:read", "https://example.com/scope!#[]~"))]
fn file(name: String) -> String {
    name
}

fn tool(name: &str) -> &'static ToolDef {
    sake::__private::inventory::iter::<ToolDef>()
        .find(|t| t.name == name)
        .unwrap()
}

fn main() {
    // The functions stay plain functions.
    assert_eq!(read_file("a".into()), "a");

    let read = tool("read_file");
    assert_eq!(read.scopes, ["files:read"]);
    assert_eq!(read.task_support, TaskSupport::Optional);
    let rewrite = tool("rewrite");
    assert_eq!(rewrite.scopes, ["files:read", "files:write"]);
    assert_eq!(rewrite.task_support, TaskSupport::Required);
    assert_eq!(tool("quick").task_support, TaskSupport::Forbidden);
    let plain = tool("plain");
    assert!(plain.scopes.is_empty());
    assert_eq!(plain.task_support, TaskSupport::Forbidden);

    let prompt = sake::__private::inventory::iter::<PromptDef>()
        .find(|p| p.name == "summarise")
        .unwrap();
    assert_eq!(prompt.scopes, ["files:read"]);
    let resource = sake::__private::inventory::iter::<ResourceDef>()
        .find(|r| r.name == "file")
        .unwrap();
    assert_eq!(
        resource.scopes,
        ["files:read", "https://example.com/scope!#[]~"]
    );

    // The options change nothing in what clients see (yet).
    let tools = sake::testing::tools(sake::Revision::LATEST).unwrap();
    let read = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_file")
        .unwrap();
    assert_eq!(
        read,
        &serde_json::json!({
            "name": "read_file",
            "description": "Reads a file.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        })
    );
}
