use sake::prelude::*;

/// A function is not a view: its HTML can be (`html = this_function` on a unit struct).
#[view(uri = "ui://fail/fn", html = "view.html")]
fn view() -> String {
    String::new()
}

fn main() {}
