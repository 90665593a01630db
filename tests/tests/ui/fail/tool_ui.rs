use sake::prelude::*;

struct NotAView;

/// Linked to a struct that is not a view.
#[tool(ui = NotAView)]
fn linked() -> String {
    String::new()
}

/// A URI that is not a view's, and a visibility of no one.
#[tool(ui = "https://example.com/view", visibility(app, robot, app))]
fn wrong() -> String {
    String::new()
}

fn main() {}
