//! The sake server under benchmark: `add`, `progress` and 18 `lookup_NNNN` tools (20 in all, a
//! realistic list). Usage: `sake-server <port>`.

mod common;

mod lookups {
    use sake::prelude::*;
    include!(concat!(env!("OUT_DIR"), "/lookups_18.rs"));
}

fn main() {
    common::main("sake-bench");
}
