use sake::prelude::*;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

/// The length of a vector.
#[tool]
fn length(point: Point) -> f64 {
    (point.x * point.x + point.y * point.y).sqrt()
}

fn main() {}
