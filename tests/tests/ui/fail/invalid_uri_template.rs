use sake::prelude::*;

/// A file.
#[resource(uri = "files://{+path}")]
fn file(path: String) -> String {
    path
}

fn main() {}
