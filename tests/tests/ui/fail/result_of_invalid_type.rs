use sake::prelude::*;

struct Handle;

/// Opens something.
#[tool]
async fn open(path: String) -> Result<Handle, std::io::Error> {
    let _ = path;
    Ok(Handle)
}

fn main() {}
