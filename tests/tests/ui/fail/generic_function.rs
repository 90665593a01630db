use sake::prelude::*;

/// Echoes.
#[tool]
fn echo<T: serde::Serialize>(value: T) -> String {
    let _ = value;
    String::new()
}

fn main() {}
