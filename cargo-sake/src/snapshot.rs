//! The crate's snapshot of its lists: the insta snapshot the test `cargo sake new` writes
//! (`insta::assert_json_snapshot!("lists", …)` of `sake::testing`'s lists for every revision),
//! found, read, compared with what the running server lists, and written by `new`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;

/// An insta snapshot file: its header, then the snapshot (`---` lines around the header).
pub(crate) fn render(source: &str, expression: &str, doc: &Value) -> String {
    let body = serde_json::to_string_pretty(doc).unwrap_or_default();
    format!("---\nsource: {source}\nexpression: {expression}\n---\n{body}\n")
}

/// The snapshot in an insta file, parsed as JSON.
pub(crate) fn parse(text: &str) -> Option<Value> {
    let body = match text.strip_prefix("---\n") {
        Some(rest) => rest.split_once("\n---\n")?.1,
        None => text,
    };
    serde_json::from_str(body).ok()
}

/// Whether a JSON value is a document of lists: an object of revisions (version strings).
pub(crate) fn is_lists(doc: &Value) -> bool {
    doc.as_object().is_some_and(|m| {
        !m.is_empty()
            && m.iter().all(|(k, v)| {
                sake::Revision::parse(k).is_some() && v.get("tools").is_some_and(Value::is_array)
            })
    })
}

/// The snapshots of lists under a package's directory (in `snapshots/` directories, not under
/// `target/` nor hidden directories), sorted.
pub(crate) fn find(package_dir: &Path, target_dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut found = Vec::new();
    let mut stack = vec![package_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && !path.starts_with(target_dir) {
                    stack.push(path);
                }
            } else if name.ends_with(".snap")
                && dir.file_name().is_some_and(|d| d == "snapshots")
                && let Ok(text) = std::fs::read_to_string(&path)
                && let Some(doc) = parse(&text)
                && is_lists(&doc)
            {
                found.push((path, doc));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Reads a snapshot file named on the command line.
pub(crate) fn read(path: &Path) -> Result<Value, Error> {
    let text = std::fs::read_to_string(path).map_err(Error::file(path))?;
    match parse(&text) {
        Some(doc) if is_lists(&doc) => Ok(doc),
        _ => Err(Error::Other(format!(
            "{} is not a snapshot of lists (an insta JSON snapshot of an object of revisions, as `cargo sake new`'s test writes)",
            path.display()
        ))),
    }
}

/// The most differences [`differences`] reports.
const MAX_DIFFERENCES: usize = 40;

/// Where two documents of lists differ, for people: one line per difference, items of a list
/// named by their name, URI or URI template rather than their place.
pub(crate) fn differences(snapshot: &Value, server: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff(&mut out, "", snapshot, server);
    if out.len() > MAX_DIFFERENCES {
        let more = out.len() - MAX_DIFFERENCES;
        out.truncate(MAX_DIFFERENCES);
        out.push(format!("… and {more} more"));
    }
    out
}

/// The identity of a list item: `name`, `uri` or `uriTemplate`.
fn identity(item: &Value) -> Option<&str> {
    ["name", "uri", "uriTemplate"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 80 {
        let cut: String = text.chars().take(77).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn diff(out: &mut Vec<String>, at: &str, a: &Value, b: &Value) {
    if a == b {
        return;
    }
    let here = if at.is_empty() { "(the document)" } else { at };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let path = format!("{at}/{k}");
                match y.get(k) {
                    Some(vb) => diff(out, &path, va, vb),
                    None => out.push(format!("{path}: only in the snapshot")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{at}/{k}: only on the server"));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.iter().chain(y).all(|i| identity(i).is_some()) => {
            for item in x {
                let id = identity(item).unwrap_or_default();
                let path = format!("{at}[{id}]");
                match y.iter().find(|o| identity(o) == Some(id)) {
                    Some(other) => diff(out, &path, item, other),
                    None => out.push(format!("{path}: only in the snapshot")),
                }
            }
            for item in y {
                let id = identity(item).unwrap_or_default();
                if !x.iter().any(|o| identity(o) == Some(id)) {
                    out.push(format!("{at}[{id}]: only on the server"));
                }
            }
            let order = |l: &[Value]| l.iter().filter_map(identity).collect::<Vec<_>>().join(",");
            if out.is_empty() && order(x) != order(y) {
                out.push(format!("{here}: the same items in another order"));
            }
        }
        _ => {
            let mut line = String::new();
            let _ = write!(
                line,
                "{here}: the snapshot has {}, the server {}",
                short(a),
                short(b)
            );
            out.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(description: &str) -> Value {
        json!({"2026-07-28": {"tools": [{"name": "greet", "description": description,
            "inputSchema": {"type": "object"}}], "prompts": [], "resources": [], "resourceTemplates": []}})
    }

    #[test]
    fn an_insta_file_is_read_back() {
        let text = render("src/tests.rs", "lists", &doc("Greets."));
        assert!(
            text.starts_with(
                "---\nsource: src/tests.rs\nexpression: lists\n---\n{\n  \"2026-07-28\""
            )
        );
        assert_eq!(parse(&text), Some(doc("Greets.")));
        assert!(is_lists(&doc("Greets.")));
        assert!(!is_lists(&json!({"tools": []})));
        assert!(!is_lists(&json!({})));
    }

    #[test]
    fn differences_name_the_item_and_the_field() {
        assert!(differences(&doc("a"), &doc("a")).is_empty());
        assert_eq!(
            differences(&doc("Greets."), &doc("Greets warmly.")),
            [
                r#"/2026-07-28/tools[greet]/description: the snapshot has "Greets.", the server "Greets warmly.""#
            ]
        );
        let mut more = doc("a");
        more["2026-07-28"]["tools"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "add", "inputSchema": {}}));
        assert_eq!(
            differences(&doc("a"), &more),
            ["/2026-07-28/tools[add]: only on the server"]
        );
    }

    #[test]
    fn snapshots_are_found_where_insta_writes_them() {
        let dir = std::env::temp_dir().join(format!("cargo-sake-snap-{}", std::process::id()));
        let snaps = dir.join("src/snapshots");
        std::fs::create_dir_all(&snaps).unwrap();
        std::fs::create_dir_all(dir.join("target/x/snapshots")).unwrap();
        std::fs::write(
            snaps.join("demo__tests__lists.snap"),
            render("src/tests.rs", "lists", &doc("a")),
        )
        .unwrap();
        std::fs::write(
            snaps.join("demo__tests__other.snap"),
            "---\nsource: x\n---\n{\"a\": 1}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("target/x/snapshots/x.snap"),
            render("x", "x", &doc("b")),
        )
        .unwrap();
        let found = find(&dir, &dir.join("target"));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, snaps.join("demo__tests__lists.snap"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
