use sake::prelude::*;

/// Reads.
#[tool(scopes("files:read", "", "files read", "say\"hi", files_write, "files:read"))]
fn read() -> String {
    String::new()
}

/// Lists no scope.
#[prompt(scopes())]
fn nothing() -> String {
    String::new()
}

/// Not a list.
#[resource(uri = "docs://about", scopes = "files:read")]
fn about() -> String {
    String::new()
}

fn main() {}
