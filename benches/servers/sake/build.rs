//! Generates the `lookup_NNNN` tools: 18 for the realistic server, 998 for the 1,000-tool one
//! (with `add` and `progress`, 20 and 1,000 tools). Each is an ordinary `#[tool]` function.

use std::fmt::Write as _;

fn generate(count: usize) -> String {
    let mut out = String::new();
    for i in 0..count {
        writeln!(
            out,
            r#"
/// Looks up entries of catalogue {i} that match a query, newest first.
#[tool(annotations(read_only, idempotent))]
fn lookup_{i:04}(
    /// What to look for: words, or a quoted phrase.
    query: String,
    /// At most this many entries (default 10).
    limit: Option<u32>,
    /// Include each entry's details.
    verbose: Option<bool>,
) -> String {{
    format!(
        "catalogue {i}: no entry matches {{query:?}} (limit {{}}, verbose {{}})",
        limit.unwrap_or(10),
        verbose.unwrap_or(false)
    )
}}"#
        )
        .unwrap();
    }
    out
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(dir.join("lookups_18.rs"), generate(18)).unwrap();
    std::fs::write(dir.join("lookups_998.rs"), generate(998)).unwrap();
    println!("cargo::rerun-if-changed=build.rs");
}
