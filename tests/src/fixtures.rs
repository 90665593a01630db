//! Types and completion functions that the fixtures of several test binaries share. The
//! fixtures themselves (`#[tool]`, `#[prompt]`, `#[resource]` functions) are in `fixtures/`:
//! see the crate's documentation for why.

use sake::prelude::CompletionRequest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The sum of two numbers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Sum {
    /// `a + b`.
    pub sum: i64,
}

/// The form an elicitation asks for: a name, without a description.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NameForm {
    pub name: String,
}

/// Completes a `style` argument: the styles that start with what was typed, of "formal" and
/// "friendly".
pub async fn complete_style(req: CompletionRequest) -> Vec<String> {
    ["formal", "friendly"]
        .into_iter()
        .filter(|s| s.starts_with(&req.value))
        .map(str::to_owned)
        .collect()
}
