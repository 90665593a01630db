use sake::prelude::*;

/// Adds.
#[tool(nmae = "add", name = "has space", task = "sometimes", scopes("files read"))]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A file.
#[resource(uri = "files://{+path}", mime = "text/plain", uri = "files://{path}")]
fn file(path: String) -> String {
    path
}

fn main() {}
