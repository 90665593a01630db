//! The sake server under benchmark: `add`, `progress`, `touch` and 18 `lookup_NNNN` tools (21
//! in all, a realistic list). Usage: `sake-server <port|stdio>`.

mod common;
mod standard;

fn main() {
    common::main("sake-bench");
}
