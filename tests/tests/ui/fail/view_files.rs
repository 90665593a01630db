use sake::prelude::*;

/// A file that does not exist.
#[view(uri = "ui://fail/missing", html = "no_such_view.html")]
struct Missing;

/// A file that is not an HTML document.
#[view(uri = "ui://fail/text", html = "view_not_html.txt")]
struct Text;

fn main() {}
