use sake::prelude::*;

/// Sometimes a task.
#[tool(task = "sometimes")]
fn sometimes() -> String {
    String::new()
}

/// Not a string.
#[tool(task = required)]
fn bare() -> String {
    String::new()
}

/// Prompts are never tasks.
#[prompt(task = "optional")]
fn prompt() -> String {
    String::new()
}

fn main() {}
