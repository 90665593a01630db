use sake::prelude::*;

/// Two contexts.
#[tool]
fn twice(a: Context, b: Context) -> String {
    let _ = (a, b);
    String::new()
}

fn main() {}
