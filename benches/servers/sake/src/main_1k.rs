//! The sake server with 1,000 tools: `add`, `progress` and 998 `lookup_NNNN`. Usage:
//! `sake-server-1k <port|stdio>` (`SAKE_BENCH_PAGE_SIZE=100` for pages).

mod common;

mod lookups {
    use sake::prelude::*;
    include!(concat!(env!("OUT_DIR"), "/lookups_998.rs"));
}

fn main() {
    common::main("sake-bench");
}
