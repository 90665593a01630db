use sake::prelude::*;

struct Handle;

/// Opens something.
#[tool]
fn open(path: String) -> Handle {
    let _ = path;
    Handle
}

fn main() {}
