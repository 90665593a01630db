//! Generates the `lookup_NNNN` tools as `#[tool]` methods of `Bench`: one `#[tool_router]`
//! block of 18 (`lookups_18`) and one of 998 (`lookups_998`), as in the sake server.

use std::fmt::Write as _;

/// `prefix` keeps the Rust method names of the two blocks apart; the tool names are the same.
fn generate(count: usize, prefix: &str) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "#[tool_router(router = lookups_{count}, vis = \"pub\")]\nimpl Bench {{"
    )
    .unwrap();
    for i in 0..count {
        writeln!(
            out,
            r#"
    #[tool(
        name = "lookup_{i:04}",
        description = "Looks up entries of catalogue {i} that match a query, newest first.",
        annotations(read_only_hint = true, idempotent_hint = true)
    )]
    fn {prefix}lookup_{i:04}(&self, Parameters(LookupArgs {{ query, limit, verbose }}): Parameters<LookupArgs>) -> String {{
        format!(
            "catalogue {i}: no entry matches {{query:?}} (limit {{}}, verbose {{}})",
            limit.unwrap_or(10),
            verbose.unwrap_or(false)
        )
    }}"#
        )
        .unwrap();
    }
    out.push_str("}\n");
    out
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(dir.join("lookups_18.rs"), generate(18, "small_")).unwrap();
    std::fs::write(dir.join("lookups_998.rs"), generate(998, "")).unwrap();
    println!("cargo::rerun-if-changed=build.rs");
}
