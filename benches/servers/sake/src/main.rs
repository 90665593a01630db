//! The sake server under benchmark: `add`, `progress`, `touch` and 18 `lookup_NNNN` tools (21
//! in all, a realistic list). Usage: `sake-server <port|stdio>`.

use sake::prelude::*;

mod common;

mod lookups {
    use sake::prelude::*;
    include!(concat!(env!("OUT_DIR"), "/lookups_18.rs"));
}

/// Says the tool list changed (the "bus" workload's notification). Here only, not in
/// `sake-server-1k`, whose list is exactly 1,000 tools like rmcp's.
#[tool]
pub fn touch(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.tools_changed();
    }
    "touched"
}

fn main() {
    common::main("sake-bench");
}
