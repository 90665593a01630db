use sake::prelude::*;

/// A struct.
#[tool]
struct Add {
    a: i64,
}

fn main() {}
