use sake::prelude::*;

/// A number.
#[resource(uri = "numbers://{n}")]
fn number(n: u64) -> u64 {
    n
}

fn main() {}
