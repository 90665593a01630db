//! Resource signatures the macro accepts: static URIs and templates.

use sake::prelude::*;

/// A static text resource.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "about"
}

/// A static binary resource, async, with a context and a title.
#[resource(
    uri = "files://logo.png",
    name = "logo",
    title = "Logo",
    mime_type = "image/png"
)]
async fn logo(ctx: Context) -> Vec<u8> {
    let _ = ctx;
    vec![0x89, b'P', b'N', b'G']
}

/// A template whose variables are parsed into the parameters' types.
#[resource(uri = "users://{id}/posts/{slug}", mime_type = "application/json", complete = complete_slug)]
async fn post(id: u64, slug: String) -> Result<String, ResourceError> {
    if id == 0 {
        return Err(ResourceError::NotFound(format!(
            "users://{id}/posts/{slug}"
        )));
    }
    Ok(format!("{{\"id\":{id},\"slug\":\"{slug}\"}}"))
}

async fn complete_slug(req: CompletionRequest) -> Vec<String> {
    vec![format!("{}-post", req.value)]
}

/// Contents built by hand.
#[resource(uri = "notes://{name}")]
fn note(name: String) -> ResourceContents {
    ResourceContents::text(format!("notes://{name}"), Some("text/markdown"), "# Note")
}

fn main() {
    let resources = sake::testing::resources(sake::Revision::LATEST).unwrap();
    assert_eq!(resources.as_array().unwrap().len(), 2);
    let templates = sake::testing::resource_templates(sake::Revision::LATEST).unwrap();
    assert_eq!(templates[1]["uriTemplate"], "users://{id}/posts/{slug}");
}
