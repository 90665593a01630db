use sake::prelude::*;

struct Calculator;

impl Calculator {
    /// Adds.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {}
