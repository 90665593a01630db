//! Every kind of tool signature the macro accepts.

use sake::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Serialize, JsonSchema)]
struct Distance {
    meters: f64,
}

/// A sync tool returning text.
#[tool]
fn sync_text(name: String) -> String {
    format!("Hello, {name}!")
}

/// An async tool with structured output.
#[tool(annotations(read_only, idempotent, open_world = false))]
async fn async_structured(
    /// Where to start.
    from: Point,
    /// Where to stop.
    to: Point,
) -> Distance {
    Distance {
        meters: ((to.x - from.x).powi(2) + (to.y - from.y).powi(2)).sqrt(),
    }
}

/// The request context, anywhere in the parameters.
#[tool]
async fn with_context(ctx: Context, steps: Option<u32>) -> String {
    for i in 0..steps.unwrap_or(1) {
        ctx.progress(f64::from(i), None).await;
    }
    ctx.revision().to_string()
}

/// A fully qualified context, and no other parameter.
#[tool]
fn qualified_context(ctx: sake::Context) -> String {
    ctx.revision().to_string()
}

/// Structured output or a tool error.
#[tool]
fn fallible_structured(meters: f64) -> Result<Distance, String> {
    if meters < 0.0 {
        return Err("negative".to_owned());
    }
    Ok(Distance { meters })
}

/// Text or a tool error, with any `Display` error type.
#[tool]
async fn fallible_text(path: String) -> Result<String, std::io::Error> {
    std::fs::read_to_string(path)
}

/// Several content blocks.
#[tool(title = "Blocks", icon(src = "https://example.com/b.png", sizes = ["any"]))]
fn blocks() -> Vec<Content> {
    vec![Content::text("one"), Content::text("two")]
}

/// One content block.
#[tool(name = "one.block")]
fn one_block() -> Content {
    Content::text("one")
}

/// A hand-built result.
#[tool]
fn raw_result(fail: bool) -> CallToolResult {
    if fail {
        CallToolResult::error("failed")
    } else {
        CallToolResult::success(vec![Content::text("ok")])
    }
}

/// Nothing to return.
#[tool(annotations(destructive = true))]
async fn nothing(#[serde(default)] force: bool) {
    let _ = force;
}

/// A scalar output.
#[tool]
fn scalar(a: i64, b: i64) -> i64 {
    a + b
}

mod mine {
    /// A type of the user's that happens to be called `Context`.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Context {
        pub user: String,
    }
}

/// `#[arg]` makes a parameter whose type is named `Context` an argument.
#[tool]
fn forced(#[arg] context: mine::Context) -> String {
    context.user
}

/// A temperature, neither Deserialize nor JsonSchema itself.
struct Celsius(f64);

fn celsius<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Celsius, D::Error> {
    f64::deserialize(d).map(Celsius)
}

/// Custom serde and schemars attributes take over from the type's own impls.
#[tool]
fn fahrenheit(
    #[serde(deserialize_with = "celsius")]
    #[schemars(with = "f64")]
    temperature: Celsius,
) -> f64 {
    temperature.0 * 1.8 + 32.0
}

fn main() {
    // The functions stay plain functions.
    assert_eq!(sync_text("Ada".into()), "Hello, Ada!");
    assert_eq!(scalar(2, 3), 5);
    let tools = sake::testing::tools(sake::Revision::LATEST).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "async_structured",
            "blocks",
            "fahrenheit",
            "fallible_structured",
            "fallible_text",
            "forced",
            "nothing",
            "one.block",
            "qualified_context",
            "raw_result",
            "scalar",
            "sync_text",
            "with_context",
        ]
    );
    let fahrenheit = &tools[2];
    assert_eq!(
        fahrenheit["inputSchema"],
        serde_json::json!({
            "type": "object",
            "properties": {"temperature": {"type": "number"}},
            "required": ["temperature"]
        })
    );
}
