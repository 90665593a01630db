use sake::prelude::*;

/// Linked to a view that does not exist: a typo is a compile error.
#[tool(ui = TallyVeiw)]
fn show_tally() -> String {
    String::new()
}

fn main() {}
