//! The path generated code names the facade by.
//!
//! The facade is published as the package `sake-mcp`, whose library is the crate `sake`: a
//! crate that depends on it as `sake-mcp = "…"` (or `sake = { package = "sake-mcp", … }`)
//! names it `sake`, and generated code says `::sake::…`. A crate that renames it
//! (`mcp = { package = "sake-mcp", … }`) names it `mcp`, and a proc macro has no `$crate` to
//! follow the rename: so the macros read the invoking crate's manifest (`CARGO_MANIFEST_DIR`,
//! and its workspace's for `mcp.workspace = true`) once per crate, and name the facade by the
//! key it is listed under. Anything they cannot read or find falls back to `::sake`.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// The facade's package name on crates.io.
const PACKAGE: &str = "sake-mcp";
/// The facade's library name: what a dependency on [`PACKAGE`] is called unless renamed.
const LIBRARY: &str = "sake";

thread_local! {
    /// The last manifest read and the name found in it (a proc-macro server may expand for
    /// several crates in one process).
    static CACHE: RefCell<Option<(PathBuf, String)>> = const { RefCell::new(None) };
}

/// `::sake`, or `::<key>` where the invoking crate renamed the facade.
pub(crate) fn path() -> TokenStream {
    let ident = Ident::new(&name(), Span::call_site());
    quote!(::#ident)
}

/// [`path`] with every token at `span`: inside `quote_spanned!`, so that an error in the
/// generated code points where it did when the path was written out there.
pub(crate) fn path_at(span: Span) -> TokenStream {
    let ident = Ident::new(&name(), span);
    quote::quote_spanned!(span=> ::#ident)
}

/// The facade's crate name in the invoking crate.
pub(crate) fn name() -> String {
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return LIBRARY.to_owned();
    };
    CACHE.with(|cache| {
        if let Some((seen, name)) = &*cache.borrow()
            && *seen == dir
        {
            return name.clone();
        }
        let name = from_manifest(&dir).unwrap_or_else(|| LIBRARY.to_owned());
        *cache.borrow_mut() = Some((dir, name.clone()));
        name
    })
}

/// The name under which the manifest in `dir` lists the facade, if it does.
fn from_manifest(dir: &Path) -> Option<String> {
    let manifest = read_table(&dir.join("Cargo.toml"))?;
    // The facade itself: its examples, tests and doctests name it by its library.
    if manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str)
        == Some(PACKAGE)
    {
        return Some(LIBRARY.to_owned());
    }
    let mut tables: Vec<&toml::Table> = Vec::new();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = manifest.get(section).and_then(toml::Value::as_table) {
            tables.push(t);
        }
    }
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        for target in targets.values().filter_map(toml::Value::as_table) {
            for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
                if let Some(t) = target.get(section).and_then(toml::Value::as_table) {
                    tables.push(t);
                }
            }
        }
    }
    let mut workspace: Option<Option<toml::Table>> = None;
    for table in tables {
        for (key, spec) in table {
            let package = match spec.get("package").and_then(toml::Value::as_str) {
                Some(p) => Some(p.to_owned()),
                // `key.workspace = true`: the rename, if any, is in the workspace's table.
                None if spec.get("workspace").and_then(toml::Value::as_bool) == Some(true) => {
                    let root = workspace.get_or_insert_with(|| workspace_manifest(dir));
                    root.as_ref()
                        .and_then(|w| w.get("workspace"))
                        .and_then(|w| w.get("dependencies"))
                        .and_then(|d| d.get(key))
                        .and_then(|s| s.get("package"))
                        .and_then(toml::Value::as_str)
                        .map(str::to_owned)
                }
                None => None,
            };
            match package.as_deref() {
                Some(PACKAGE) => return Some(key.replace('-', "_")),
                None if key == PACKAGE => return Some(LIBRARY.to_owned()),
                _ => {}
            }
        }
    }
    None
}

/// The manifest of the workspace `dir` belongs to: the nearest one above it with a
/// `[workspace]` table.
fn workspace_manifest(dir: &Path) -> Option<toml::Table> {
    dir.ancestors()
        .skip(1)
        .filter_map(|d| read_table(&d.join("Cargo.toml")))
        .find(|t| t.contains_key("workspace"))
}

fn read_table(path: &Path) -> Option<toml::Table> {
    std::fs::read_to_string(path).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest in a directory of its own, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str, files: &[(&str, &str)]) -> Dir {
            let dir =
                std::env::temp_dir().join(format!("sake-krate-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            for (path, text) in files {
                let path = dir.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn found(name: &str, manifest: &str) -> Option<String> {
        let dir = Dir::new(name, &[("Cargo.toml", manifest)]);
        from_manifest(&dir.0)
    }

    #[test]
    fn the_published_name_is_the_library() {
        let m = "[package]\nname = \"x\"\n[dependencies]\nsake-mcp = \"0.1\"\n";
        assert_eq!(found("plain", m).as_deref(), Some("sake"));
        let m = "[package]\nname = \"x\"\n[dependencies]\nsake = { package = \"sake-mcp\", version = \"0.1\" }\n";
        assert_eq!(found("keyed", m).as_deref(), Some("sake"));
    }

    #[test]
    fn a_renamed_dependency_is_named_by_its_key() {
        let m = "[package]\nname = \"x\"\n[dependencies]\nmy-mcp = { package = \"sake-mcp\", version = \"0.1\" }\n";
        assert_eq!(found("renamed", m).as_deref(), Some("my_mcp"));
        let m = "[package]\nname = \"x\"\n[target.'cfg(unix)'.dev-dependencies]\nm = { package = \"sake-mcp\", path = \"..\" }\n";
        assert_eq!(found("target", m).as_deref(), Some("m"));
    }

    #[test]
    fn the_facade_and_strangers() {
        let m = "[package]\nname = \"sake-mcp\"\n[lib]\nname = \"sake\"\n";
        assert_eq!(found("itself", m).as_deref(), Some("sake"));
        // Another project's `sake` is not the facade: nothing found, `::sake` by default.
        let m = "[package]\nname = \"x\"\n[dependencies]\nsake = \"0.0.1\"\n";
        assert_eq!(found("other", m), None);
        assert_eq!(found("broken", "[package\n"), None);
    }

    #[test]
    fn a_workspace_rename_is_followed() {
        let dir = Dir::new(
            "workspace",
            &[
                (
                    "Cargo.toml",
                    "[workspace]\nmembers = [\"member\"]\n[workspace.dependencies]\nmcp = { package = \"sake-mcp\", version = \"0.1\" }\n",
                ),
                (
                    "member/Cargo.toml",
                    "[package]\nname = \"member\"\n[dependencies]\nmcp.workspace = true\n",
                ),
            ],
        );
        assert_eq!(from_manifest(&dir.0.join("member")).as_deref(), Some("mcp"));
    }
}
