use sake::prelude::*;

/// Looks something up.
#[tool(title = 5, annotations(readonly))]
fn lookup(
    /// The region.
    #[arg(header = "Bad Name")]
    region: String,
    /// The key.
    key: &str,
    /// The same header, in another case.
    #[arg(header = "bad name", default)]
    other: String,
) -> String {
    format!("{region}{key}{other}")
}

fn main() {}
