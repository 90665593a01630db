use sake::prelude::*;

struct Point {
    x: f64,
    y: f64,
}

/// The length of a vector.
#[tool]
fn length(name: String, point: Point) -> f64 {
    let _ = name;
    (point.x * point.x + point.y * point.y).sqrt()
}

fn main() {}
