//! The tool `cargo sake new` writes (`templates/tool.rs`), compiled into `cargo sake` as well:
//! `new` writes the snapshot of what each revision lists from it, and the new crate's test
//! compares its own lists (`sake::testing`) with that snapshot, so `cargo test` passes at once
//! and a change in how sake renders them is caught there.

use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

include!("../templates/tool.rs");

/// What each revision lists for the template's tool, as the new crate's `lists` test makes it.
pub(crate) fn lists() -> Result<Value, sake::Error> {
    let mut lists = Map::new();
    for revision in sake::Revision::ALL {
        lists.insert(
            revision.as_str().to_owned(),
            json!({
                "tools": sake::testing::tools(revision)?,
                "prompts": sake::testing::prompts(revision)?,
                "resources": sake::testing::resources(revision)?,
                "resourceTemplates": sake::testing::resource_templates(revision)?,
            }),
        );
    }
    Ok(Value::Object(lists))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_template_tool_is_listed_on_every_revision() {
        let lists = super::lists().unwrap();
        for revision in sake::Revision::ALL {
            let tools = lists[revision.as_str()]["tools"].as_array().unwrap();
            assert_eq!(tools.len(), 1, "{revision}");
            assert_eq!(tools[0]["name"], "greet");
            assert_eq!(tools[0]["description"], "Greets someone by name.");
        }
        assert_eq!(super::greet("Ada".into()).message, "Hello, Ada!");
    }
}
