use sake::prelude::*;

/// Greets.
#[prompt]
fn greet(name: String) -> u32 {
    let _ = name;
    1
}

fn main() {}
