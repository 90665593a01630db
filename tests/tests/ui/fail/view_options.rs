use sake::prelude::*;

/// Every option wrong at once.
#[view(
    uri = "https://example.com/view",
    html = 42,
    csp(connect_domains = ["https://api.example.com; script-src *", "*"], fonts = []),
    permissions(camera, camera, speaker),
    domain = "two words",
    task = "optional"
)]
struct Everything;

/// Nothing given.
#[view]
struct Nothing;

fn page() -> &'static str {
    "<!DOCTYPE html>"
}

/// A view names one view.
#[view(uri = "ui://fail/generic", html = page)]
struct Generic<T>(T);

fn main() {}
