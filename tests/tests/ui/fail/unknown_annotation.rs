use sake::prelude::*;

/// Deletes everything.
#[tool(annotations(destructive, readonly))]
fn wipe() -> String {
    String::new()
}

fn main() {}
