use sake::prelude::*;

struct Id(u64);

/// A user.
#[resource(uri = "users://{id}")]
fn user(id: Id) -> String {
    id.0.to_string()
}

fn main() {}
