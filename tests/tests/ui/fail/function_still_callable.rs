use sake::prelude::*;

/// Adds.
#[tool(nmae = "add", task = "always")]
fn add(
    /// The first addend.
    #[arg(header = "A")]
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

/// Greets.
#[prompt(uri = "greetings://x")]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {
    // The attributes are wrong, but the functions are emitted as written: these calls compile,
    // and the only errors are the attributes'.
    assert_eq!(add(1, 2), 3);
    let _greeting = greet("Ada".to_owned());
}
