use sake::prelude::*;

/// A user's post.
#[resource(uri = "users://{id}/posts/{slug}")]
fn post(id: u64) -> String {
    id.to_string()
}

fn main() {}
