/// A greeting.
#[derive(Serialize, JsonSchema)]
struct Greeting {
    /// The text to show.
    message: String,
}

/// Greets someone by name.
#[tool(annotations(read_only, idempotent))]
fn greet(
    /// Who to greet.
    name: String,
) -> Greeting {
    Greeting {
        message: format!("Hello, {name}!"),
    }
}
