use sake::prelude::*;

/// Adds.
#[tool(name = "a_tool_name_that_goes_on_and_on_well_past_the_sixty_four_character_limit")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
