//! Prompt signatures the macro accepts.

use sake::prelude::*;

/// Required and optional arguments.
#[prompt]
fn review(
    /// The code to review.
    code: String,
    /// Its language.
    language: Option<String>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "code".to_owned());
    vec![PromptMessage::user(format!(
        "Review this {language}:\n{code}"
    ))]
}

/// An async prompt returning one message, with completions.
#[prompt(name = "explain", title = "Explain", complete = complete_topic)]
async fn explain_topic(topic: String, ctx: Context) -> PromptMessage {
    let _ = ctx;
    PromptMessage::user(format!("Explain {topic}"))
}

async fn complete_topic(req: CompletionRequest) -> Vec<String> {
    ["rust", "ruby"]
        .iter()
        .filter(|t| t.starts_with(&req.value))
        .map(|t| (*t).to_owned())
        .collect()
}

/// No arguments, plain text.
#[prompt]
fn hello() -> String {
    "Say hello.".to_owned()
}

/// A fallible prompt.
#[prompt]
fn fallible(name: Option<String>) -> Result<GetPromptResult, std::fmt::Error> {
    let mut result = GetPromptResult::new(vec![PromptMessage::user("hi")]);
    result.description = name;
    Ok(result)
}

fn main() {
    let prompts = sake::testing::prompts(sake::Revision::LATEST).unwrap();
    assert_eq!(
        prompts[3],
        serde_json::json!({
            "name": "review",
            "description": "Required and optional arguments.",
            "arguments": [
                {"name": "code", "description": "The code to review.", "required": true},
                {"name": "language", "description": "Its language.", "required": false}
            ]
        })
    );
}
