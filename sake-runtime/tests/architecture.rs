//! The layers of docs/architecture.md, checked on the source.
//!
//! Every file of `sake-runtime/src` belongs to a layer; a file may name (`crate::x`) only
//! modules of its own layer or of layers below. The files of `protocol/` have an order of
//! their own, so that they form no circle either. And no code outside the revision table
//! (`protocol/version.rs`) decides by revision: no `is_modern`, no comparison with a version
//! string, no match on a particular revision.
//!
//! Unit-test modules (`#[cfg(test)]`, at the end of a file) may use anything: they build
//! servers to test the parts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The runtime's top-level modules and their layers (0 is the bottom).
const LAYERS: &[(&str, u8)] = &[
    ("signing", 0),
    ("protocol", 1),
    ("schema", 2),
    ("uri_template", 2),
    ("auth", 2),
    ("net", 2),
    // OpenTelemetry (feature `otel`): the pipeline, `_meta` propagation, the duration metric.
    ("otel", 2),
    ("handler", 3),
    ("registry", 4),
    // Start-up errors name registry and schema findings.
    ("error", 4),
    // Schema compatibility reports check the registry's tools.
    ("compat", 4),
    // Task stores and the rules of a task's life.
    ("tasks", 4),
    // Replicas sharing through Redis: a bus (handler's events) and a task store.
    ("redis", 4),
    ("server", 5),
    ("transport", 6),
    ("service", 7),
    ("testing", 7),
    // Re-exports internals for sake's own fuzz targets and benches.
    ("internals", 7),
    ("client", 8),
    ("lib", 9),
];

/// What the client may use besides itself: it is a peer of the server, not a user of it.
const CLIENT_MAY_USE: &[&str] = &["protocol", "auth", "net", "otel"];

/// The files of `protocol/`, in the order they may import each other.
const PROTOCOL_ORDER: &[(&str, u8)] = &[
    ("mod", 9),
    ("types", 0),
    ("framing", 0),
    ("version", 1),
    ("jsonrpc", 2),
    ("headers", 3),
    ("methods", 3),
    ("tasks", 3),
    ("apps", 3),
    ("meta", 4),
    ("render", 5),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code: without unit tests (from the first `#[cfg(test)]` on), comments and
/// string contents (so that prose and messages do not count as code).
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The top-level module a file belongs to (`server/front/mod.rs` → `server`).
fn module_of(relative: &Path) -> String {
    let first = relative
        .components()
        .next()
        .expect("a path inside src")
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    first.trim_end_matches(".rs").to_owned()
}

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every `crate::x` a file's code names.
fn crate_refs(code: &str) -> Vec<String> {
    let mut refs = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        // `crate::{a, b}` groups name several modules.
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    refs.push(name);
                }
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                refs.push(name);
            }
        }
        rest = after;
    }
    refs
}

#[test]
fn no_layer_imports_a_layer_above_it() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut problems = Vec::new();
    let mut unknown = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&root).expect("inside src");
        let module = module_of(relative);
        let Some(own) = layer(&module) else {
            unknown.insert(module, relative.display().to_string());
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).expect("readable"));
        for used in crate_refs(&code) {
            // Items re-exported at the crate root (`crate::Error`) are the base's.
            let Some(theirs) = layer(&used).or_else(|| {
                used.chars()
                    .next()
                    .is_some_and(char::is_uppercase)
                    .then_some(0)
            }) else {
                continue;
            };
            if module == "client" {
                if used != "client"
                    && !CLIENT_MAY_USE.contains(&used.as_str())
                    && layer(&used).is_some()
                {
                    problems.push(format!(
                        "{}: the client uses crate::{used}",
                        relative.display()
                    ));
                }
                continue;
            }
            if theirs > own {
                problems.push(format!(
                    "{} (layer {own}) imports crate::{used} (layer {theirs})",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules with no layer in LAYERS (and docs/architecture.md): {unknown:?}"
    );
    assert!(
        problems.is_empty(),
        "upward imports:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_protocol_files_import_in_one_direction() {
    let dir = src().join("protocol");
    let mut problems = Vec::new();
    let rank = |name: &str| {
        PROTOCOL_ORDER
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| *r)
    };
    for entry in std::fs::read_dir(&dir).expect("protocol/ is readable") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let own = rank(&name)
            .unwrap_or_else(|| panic!("protocol/{name}.rs has no rank in PROTOCOL_ORDER"));
        let code = code_of(&std::fs::read_to_string(&path).expect("readable"));
        let mut used = Vec::new();
        for prefix in ["super::", "crate::protocol::"] {
            let mut rest = code.as_str();
            while let Some(i) = rest.find(prefix) {
                let after = &rest[i + prefix.len()..];
                let n: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                used.push(n);
                rest = after;
            }
        }
        for other in used {
            if let Some(theirs) = rank(&other)
                && other != name
                && theirs >= own
                && name != "mod"
            {
                problems.push(format!("protocol/{name}.rs uses protocol::{other}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn only_the_revision_table_decides_by_revision() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).expect("inside src");
        if relative == Path::new("protocol/version.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("readable");
        let code = code_of(&text);
        for (n, line) in code.lines().enumerate() {
            let at = || format!("{}:{}: {}", relative.display(), n + 1, line.trim());
            if line.contains("is_modern") {
                problems.push(at());
            }
            // A particular revision named in code decides something for it alone.
            if line.contains("Revision::V20") {
                problems.push(at());
            }
            // A version string compared with anything.
            let bytes = line.as_bytes();
            for (i, _) in line.match_indices("\"20") {
                let date = &bytes[i + 1..];
                let is_date = date.len() >= 11
                    && date[..10].iter().enumerate().all(|(k, b)| {
                        if k == 4 || k == 7 {
                            *b == b'-'
                        } else {
                            b.is_ascii_digit()
                        }
                    })
                    && date[10] == b'"';
                if !is_date {
                    continue;
                }
                let before = line[..i].trim_end();
                let after = line[i + 12..].trim_start();
                if before.ends_with("==")
                    || before.ends_with("!=")
                    || after.starts_with("==")
                    || after.starts_with("!=")
                    || after.starts_with("=>")
                    || before.ends_with("matches!(")
                {
                    problems.push(at());
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "decisions by revision outside protocol/version.rs (make them a column of the revision table):\n{}",
        problems.join("\n")
    );
}

/// The checker finds what it is meant to find.
#[test]
fn the_checks_see_what_they_look_for() {
    assert_eq!(
        crate_refs("use crate::server::Shared; use crate::{protocol::x, handler};"),
        ["server", "protocol", "handler"]
    );
    let code = code_of("let a = 1; // crate::server\n#[cfg(test)]\nuse crate::service::Server;");
    assert!(crate_refs(&code).is_empty());
    assert_eq!(
        module_of(Path::new("server/front/mod.rs")),
        "server".to_owned()
    );
}
