use sake::prelude::*;

/// Asks for a number of jokes.
#[prompt]
fn jokes(topic: String, count: u32) -> String {
    format!("Tell {count} jokes about {topic}.")
}

fn main() {}
