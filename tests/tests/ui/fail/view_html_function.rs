use sake::prelude::*;

fn takes_a_number(n: i32) -> String {
    n.to_string()
}

fn returns_a_number() -> i32 {
    1
}

/// A function of the wrong shape.
#[view(uri = "ui://fail/shape", html = takes_a_number)]
struct Shape;

/// A function that returns no HTML.
#[view(uri = "ui://fail/number", html = returns_a_number)]
struct Number;

fn main() {}
