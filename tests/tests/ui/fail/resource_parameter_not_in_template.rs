use sake::prelude::*;

/// A user's profile.
#[resource(uri = "users://{id}/profile")]
fn profile(id: u64, verbose: bool) -> String {
    format!("{id} {verbose}")
}

fn main() {}
