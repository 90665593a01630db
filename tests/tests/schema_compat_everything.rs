//! The schema compatibility reports of the conformance fixture's tools (examples/everything.rs),
//! per client profile (snapshots). Apart from tests/tests/schema_compat.rs, which holds the
//! quickstart's: both have a `greet` tool, and the quickstart's own tests serve every tool of
//! their binary.
//!
//! A snapshot that looks wrong is fixed in `sake-runtime/src/schema/compat/`, never by hand.

#[path = "../../examples/everything.rs"]
#[allow(dead_code)]
mod everything;

use sake::Registry;
use sake::compat::{self, Profile};
use sake::registry::{PromptDef, ResourceDef, ToolDef};

#[test]
fn reports_of_the_fixture() {
    let registry = Registry::from_defs(
        inventory::iter::<ToolDef>(),
        inventory::iter::<PromptDef>(),
        inventory::iter::<ResourceDef>(),
    )
    .unwrap();
    for profile in Profile::ALL {
        let report = compat::check_registry(&registry, profile);
        insta::assert_json_snapshot!(format!("everything_{}", profile.id()), report);
    }
}
