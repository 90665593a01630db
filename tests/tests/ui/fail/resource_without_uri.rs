use sake::prelude::*;

/// About.
#[resource(mime_type = "text/plain")]
fn about() -> String {
    String::new()
}

fn main() {}
