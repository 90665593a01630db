use sake::prelude::*;

/// Greets.
#[tool]
fn greet(name: &str) -> String {
    format!("Hello, {name}!")
}

fn main() {}
