//! `#[view]`'s item: the unit struct that names the view (so that `#[tool(ui = TheStruct)]`
//! is checked by the compiler), and its HTML: a file embedded at compile time, read here to
//! check it is an HTML document and to take its SHA-256, or a function called on each read.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;
use sha2::Digest as _;
use syn::LitStr;

use crate::attr::{Html, ItemAttrs};
use crate::ctxt::Ctxt;

/// The struct a `#[view]` is on, and its HTML file if it names one.
pub(crate) struct View {
    pub item: syn::ItemStruct,
    /// `html = "file.html"`, read (`None` for a function, or when it could not be read: the
    /// error is recorded).
    pub file: Option<File>,
}

impl View {
    /// Reads the HTML file the attribute names, if it names one; errors go to `cx`.
    pub fn from_syn(cx: &Ctxt, attrs: &ItemAttrs, item: syn::ItemStruct) -> View {
        let file = match &attrs.html {
            Some(Html::File(name)) => read(cx, name),
            _ => None,
        };
        View { item, file }
    }

    /// The struct and its `View` impl: emitted whatever the errors, so that the tools that
    /// name it report nothing more.
    pub fn emitted(&self, attrs: &ItemAttrs) -> TokenStream {
        let item = &self.item;
        let view_impl = crate::expand::view_impl(attrs, item);
        quote!(#item #view_impl)
    }
}

/// An HTML file read at compile time.
pub(crate) struct File {
    /// The path `include_str!` is given.
    pub include: String,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// Where a file named in the attribute is: next to the source file that names it, as
/// `include_str!` finds it; under the crate's manifest directory when the source file is
/// unknown (the attribute came out of another macro).
fn locate(name: &LitStr) -> (PathBuf, bool) {
    let relative = PathBuf::from(name.value());
    if relative.is_absolute() {
        return (relative, true);
    }
    if let Some(dir) = name
        .span()
        .local_file()
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
    {
        return (dir.join(&relative), false);
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(PathBuf::new, PathBuf::from);
    (manifest.join(relative), true)
}

/// Reads `html = "…"`: it must exist, be UTF-8 and be an HTML document. Errors go to `cx`,
/// at the file name.
fn read(cx: &Ctxt, name: &LitStr) -> Option<File> {
    let (path, absolute) = locate(name);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            cx.error_spanned_by(
                name,
                format!(
                    "cannot read the view's HTML {:?} (looked for {}): {e}; the file name is relative to this source file, as with include_str!",
                    name.value(),
                    path.display()
                ),
            );
            return None;
        }
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        cx.error_spanned_by(
            name,
            format!(
                "{:?} is not UTF-8 text: a view is an HTML document",
                name.value()
            ),
        );
        return None;
    };
    if !is_html_document(text) {
        cx.error_spanned_by(
            name,
            format!(
                "{:?} is not an HTML document: a view starts with `<!DOCTYPE html>` (or `<html>`)",
                name.value()
            ),
        );
        return None;
    }
    let sha256 = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // The name as written resolves from this source file, as it did here; a path that only
    // the manifest directory explains is given whole.
    let include = if absolute {
        path.display().to_string()
    } else {
        name.value()
    };
    Some(File { include, sha256 })
}

/// Whether a text starts (after a byte-order mark, whitespace and comments) with a doctype or
/// an `<html>` element.
fn is_html_document(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    while let Some(after) = rest.strip_prefix("<!--") {
        match after.find("-->") {
            Some(end) => rest = after[end + 3..].trim_start(),
            None => return false,
        }
    }
    let head: String = rest
        .chars()
        .take(14)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_documents() {
        for ok in [
            "<!DOCTYPE html><html></html>",
            "\u{feff}\n  <!doctype HTML>\n<p>",
            "<!-- a view -->\n<!DOCTYPE html>",
            "<html lang=\"en\">",
        ] {
            assert!(is_html_document(ok), "{ok:?}");
        }
        for not in [
            "",
            "hello",
            "<div>fragment</div>",
            "<!-- unclosed <!DOCTYPE html>",
            "{\"json\": 1}",
        ] {
            assert!(!is_html_document(not), "{not:?}");
        }
    }
}
