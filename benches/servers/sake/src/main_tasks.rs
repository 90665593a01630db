//! `sake-server` with one more tool, `slow_add`, that may run as a task: the server then has
//! the tasks extension on, with its in-memory task store, next to the in-memory event bus
//! every server has (the "memory" workload's second sake row). Usage: `sake-server-tasks
//! <port|stdio>`.

use sake::prelude::*;

mod common;
mod standard;

/// Adds two integers, as a task when the client asks.
#[tool(task = "optional")]
pub fn slow_add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

fn main() {
    common::main("sake-bench");
}
