//! What a running server lists, read over the wire as its clients read it: for each revision
//! (`server/discover` and 2026-07-28 requests, `initialize` at each handshake revision), and for
//! clients with and without MCP Apps, which changes the tools and resources lists. Then the table
//! `dev` and `schemas --table` print, the warnings (what a revision leaves out, schemas a client
//! profile refuses) and the compatibility reports, computed on the listed schemas.

use std::fmt::Write as _;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};
use sake::client::{Client, ClientBuilder};
use sake::compat::{self, Profile, Report};
use sake::{Implementation, Revision};
use serde_json::{Map, Value, json};

use crate::{Error, style};

/// The kinds of list, with the key of their items' identity.
pub(crate) const KINDS: [(&str, &str, &str, &str); 4] = [
    // (key in the document, method, what an item is called, the item's identity)
    ("tools", "tools/list", "tool", "name"),
    ("prompts", "prompts/list", "prompt", "name"),
    ("resources", "resources/list", "resource", "uri"),
    (
        "resourceTemplates",
        "resources/templates/list",
        "resource template",
        "uriTemplate",
    ),
];

/// A server's lists, read over the wire.
#[derive(Clone, Debug)]
pub(crate) struct Lists {
    /// Each revision's lists as a client without MCP Apps sees them: an object of revisions
    /// (version strings, newest first), each `{tools, prompts, resources, resourceTemplates}`.
    /// What `cargo sake schemas` prints and the crate's snapshot holds.
    pub plain: Value,
    /// The same as a client that declares MCP Apps (`io.modelcontextprotocol/ui`) sees them.
    pub apps: Value,
    /// The server's name and version, as it gave them.
    pub server: Option<Implementation>,
    /// Revisions the server does not serve, and why.
    pub unserved: Vec<(Revision, String)>,
}

impl Lists {
    /// What `SAKE_PREVIOUS_LISTS` holds: the plain lists, and the ones with MCP Apps under
    /// `withApps`.
    pub fn previous_document(&self) -> Value {
        let mut doc = self.plain.clone();
        if let Value::Object(m) = &mut doc {
            m.insert("withApps".into(), self.apps.clone());
        }
        doc
    }
}

/// Reads every list of the server at `url`, at every revision, with and without MCP Apps.
pub(crate) async fn fetch(
    url: &str,
    headers: &[(HeaderName, HeaderValue)],
) -> Result<Lists, Error> {
    let mut plain = Map::new();
    let mut apps = Map::new();
    let mut unserved = Vec::new();
    let mut server = None;
    for revision in Revision::ALL {
        match read(url, revision, false, headers).await {
            Ok((lists, info, ui)) => {
                // A server without MCP Apps lists the same to every client.
                let with_apps = if ui {
                    read(url, revision, true, headers).await?.0
                } else {
                    lists.clone()
                };
                plain.insert(revision.as_str().into(), lists);
                apps.insert(revision.as_str().into(), with_apps);
                server = server.or(info);
            }
            Err(Unserved(why)) => unserved.push((revision, why)),
        }
    }
    if plain.is_empty() {
        let why: Vec<String> = unserved
            .iter()
            .map(|(r, why)| format!("  {r}: {why}"))
            .collect();
        return Err(Error::Wire(format!(
            "the server at {url} answered no revision's client:\n{}",
            why.join("\n")
        )));
    }
    Ok(Lists {
        plain: Value::Object(plain),
        apps: Value::Object(apps),
        server,
        unserved,
    })
}

/// Why a revision's lists could not be read.
struct Unserved(String);

impl From<Unserved> for Error {
    fn from(u: Unserved) -> Error {
        Error::Wire(u.0)
    }
}

/// One revision's lists, for a client with MCP Apps or without; the server's name and version;
/// whether it declares MCP Apps.
async fn read(
    url: &str,
    revision: Revision,
    apps: bool,
    headers: &[(HeaderName, HeaderValue)],
) -> Result<(Value, Option<Implementation>, bool), Unserved> {
    let mut builder = ClientBuilder::new()
        .info("cargo-sake", env!("CARGO_PKG_VERSION"))
        .revision(revision)
        .apps(apps)
        .timeout(Duration::from_secs(30));
    for (name, value) in headers {
        builder = builder.header(name.clone(), value.clone());
    }
    let client = builder
        .connect(url)
        .await
        .map_err(|e| Unserved(format!("a {revision} client cannot connect: {e}")))?;
    if client.revision() != revision {
        let answered = client.revision();
        client.close().await;
        return Err(Unserved(format!(
            "a {revision} client's `initialize` was answered with {answered}"
        )));
    }
    let caps = client.server_capabilities();
    let offered = [
        caps.tools.is_some(),
        caps.prompts.is_some(),
        caps.resources.is_some(),
        caps.resources.is_some(),
    ];
    let mut lists = Map::new();
    for ((key, method, _, _), offered) in KINDS.into_iter().zip(offered) {
        let items = if offered {
            all_pages(&client, method, key)
                .await
                .map_err(|e| Unserved(format!("{method} failed for a {revision} client: {e}")))?
        } else {
            Vec::new()
        };
        lists.insert(key.into(), Value::Array(items));
    }
    let info = client.server_info();
    let ui = caps
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(sake::apps::EXTENSION));
    client.close().await;
    Ok((Value::Object(lists), info, ui))
}

/// The most pages a list may have.
const MAX_PAGES: usize = 1000;

/// Every item of a list, following `nextCursor`.
async fn all_pages(client: &Client, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let mut page = client
            .request(method, params)
            .await
            .map_err(|e| e.to_string())?;
        match page.get_mut(key).map(Value::take) {
            Some(Value::Array(more)) => items.extend(more),
            _ => return Err(format!("the result has no `{key}` array")),
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
            Some(_) => return Err("the same `nextCursor` twice: the pagination loops".into()),
            None => return Ok(items),
        }
    }
    Err(format!("more than {MAX_PAGES} pages"))
}

/// The items of one revision's list of `key`.
fn items<'a>(doc: &'a Value, revision: &str, key: &str) -> &'a [Value] {
    doc.get(revision)
        .and_then(|l| l.get(key))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// An item's identity (its name, URI or URI template).
fn id_of<'a>(item: &'a Value, field: &str) -> &'a str {
    item.get(field).and_then(Value::as_str).unwrap_or("?")
}

/// The revisions of a document, in its order (newest first).
fn revisions(doc: &Value) -> Vec<&str> {
    doc.as_object()
        .map(|m| {
            m.keys()
                .map(String::as_str)
                .filter(|k| Revision::parse(k).is_some())
                .collect()
        })
        .unwrap_or_default()
}

/// Every item of a kind over all revisions, in order of first appearance.
fn union<'a>(doc: &'a Value, key: &str, field: &str) -> Vec<&'a str> {
    let mut all: Vec<&str> = Vec::new();
    for rev in revisions(doc) {
        for item in items(doc, rev, key) {
            let id = id_of(item, field);
            if !all.contains(&id) {
                all.push(id);
            }
        }
    }
    all
}

/// The table of what each revision lists, with a note on what MCP Apps clients see besides.
pub(crate) fn table(lists: &Lists) -> String {
    let doc = &lists.plain;
    let revs = revisions(doc);
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for (key, _, _, field) in KINDS {
        let title = match key {
            "resourceTemplates" => "resource templates".to_owned(),
            other => other.to_owned(),
        };
        let counts = revs
            .iter()
            .map(|r| items(doc, r, key).len().to_string())
            .collect();
        rows.push((title, counts));
        for id in union(doc, key, field) {
            let marks = revs
                .iter()
                .map(|r| {
                    let listed = items(doc, r, key).iter().any(|i| id_of(i, field) == id);
                    if listed { "✓" } else { "–" }.to_owned()
                })
                .collect();
            rows.push((format!("  {id}"), marks));
        }
    }
    let first = rows
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0)
        .max(18)
        + 2;
    let mut out = String::new();
    let _ = write!(out, "{:first$}", "");
    for r in &revs {
        let _ = write!(out, "{r:>12}");
    }
    out.push('\n');
    for (title, cells) in rows {
        let indented = title.starts_with(' ');
        let shown = if indented {
            title.clone()
        } else {
            style::bold(&title)
        };
        let pad = first.saturating_sub(title.chars().count());
        let _ = write!(out, "{shown}{:pad$}", "");
        for c in cells {
            let _ = write!(out, "{c:>12}");
        }
        out.push('\n');
    }
    for (rev, why) in &lists.unserved {
        let _ = writeln!(out, "{rev}: not served ({why})");
    }
    if let Some(note) = apps_note(lists) {
        out.push_str(&note);
    }
    out
}

/// Whether a client that declares MCP Apps sees a tool with a view (`_meta.ui.resourceUri`)
/// on some revision.
pub(crate) fn has_views(lists: &Lists) -> bool {
    revisions(&lists.apps).into_iter().any(|rev| {
        items(&lists.apps, rev, "tools")
            .iter()
            .any(|t| t.pointer("/_meta/ui/resourceUri").is_some())
    })
}

/// What a client that declares MCP Apps sees besides the table: tools only views call, tools
/// carrying their view in `_meta.ui`, and the views among the resources. `None` when it sees
/// the same lists.
pub(crate) fn apps_note(lists: &Lists) -> Option<String> {
    if lists.apps == lists.plain {
        return None;
    }
    let newest = *revisions(&lists.apps).first()?;
    let plain_tools: Vec<&str> = items(&lists.plain, newest, "tools")
        .iter()
        .map(|t| id_of(t, "name"))
        .collect();
    let app_tools = items(&lists.apps, newest, "tools");
    let only: Vec<String> = app_tools
        .iter()
        .map(|t| id_of(t, "name"))
        .filter(|n| !plain_tools.contains(n))
        .map(|n| format!("`{n}`"))
        .collect();
    let with_view: Vec<String> = app_tools
        .iter()
        .filter(|t| t.pointer("/_meta/ui").is_some())
        .map(|t| format!("`{}`", id_of(t, "name")))
        .collect();
    let plain_resources: Vec<&str> = items(&lists.plain, newest, "resources")
        .iter()
        .map(|r| id_of(r, "uri"))
        .collect();
    let views: Vec<String> = items(&lists.apps, newest, "resources")
        .iter()
        .map(|r| id_of(r, "uri"))
        .filter(|u| !plain_resources.contains(u))
        .map(|u| format!("`{u}`"))
        .collect();
    let mut out = String::from(
        "clients that declare MCP Apps (io.modelcontextprotocol/ui) see more, on every revision:\n",
    );
    if !with_view.is_empty() {
        let _ = writeln!(
            out,
            "  tools with a view (_meta.ui): {}",
            with_view.join(", ")
        );
    }
    if !only.is_empty() {
        let _ = writeln!(out, "  tools only views call: {}", only.join(", "));
    }
    if !views.is_empty() {
        let _ = writeln!(out, "  views among the resources: {}", views.join(", "));
    }
    Some(out)
}

/// Every warning about the lists: what some revisions leave out (and why, where the listing
/// says), and each schema finding of each client profile.
pub(crate) fn warnings(lists: &Lists) -> Vec<String> {
    let doc = &lists.plain;
    let revs = revisions(doc);
    let mut out = Vec::new();
    for (key, _, what, field) in KINDS {
        for id in union(doc, key, field) {
            let missing: Vec<&str> = revs
                .iter()
                .copied()
                .filter(|r| !items(doc, r, key).iter().any(|i| id_of(i, field) == id))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let listing = revs
                .iter()
                .find_map(|r| items(doc, r, key).iter().find(|i| id_of(i, field) == id));
            let why = listing.map(|l| reason(key, l)).unwrap_or_default();
            out.push(format!(
                "{what} `{id}` is left out of {}{why}",
                english_list(&missing)
            ));
        }
    }
    for report in reports(lists, &Profile::ALL) {
        for finding in &report.findings {
            out.push(format!("{}: {finding}", report.profile.id()));
        }
    }
    out
}

/// Why a revision leaves a tool out, from its listing where it tells.
fn reason(key: &str, listing: &Value) -> String {
    if key != "tools" {
        return String::new();
    }
    let output_type = listing.pointer("/outputSchema/type");
    if output_type.is_some_and(|t| t != "object") {
        return ": its structured output is not an object, which the handshake revisions do not allow (return a struct to reach their clients)".into();
    }
    if listing.pointer("/execution/taskSupport") == Some(&json!("required")) {
        return ": it runs only as a task, and only 2026-07-28 has tasks".into();
    }
    String::new()
}

fn english_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The compatibility report of each profile over every tool the server lists (the newest
/// revision's list for a client with MCP Apps, which holds them all), computed on the schemas
/// it lists.
pub(crate) fn reports(lists: &Lists, profiles: &[Profile]) -> Vec<Report> {
    let newest = revisions(&lists.apps).first().copied().unwrap_or_default();
    let tools: Vec<sake::Tool> = items(&lists.apps, newest, "tools")
        .iter()
        .filter_map(|t| serde_json::from_value(t.clone()).ok())
        .collect();
    profiles
        .iter()
        .map(|&profile| Report {
            profile,
            tools: tools.len(),
            findings: tools
                .iter()
                .flat_map(|t| compat::check_tool(profile, t))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(plain: Value, apps: Value) -> Lists {
        Lists {
            plain,
            apps,
            server: None,
            unserved: Vec::new(),
        }
    }

    fn doc(newest_tools: Value, older_tools: Value) -> Value {
        let mut m = Map::new();
        for (i, rev) in Revision::ALL.iter().enumerate() {
            let tools = if i == 0 {
                newest_tools.clone()
            } else {
                older_tools.clone()
            };
            m.insert(
                rev.as_str().into(),
                json!({"tools": tools, "prompts": [{"name": "explain"}], "resources": [], "resourceTemplates": []}),
            );
        }
        Value::Object(m)
    }

    #[test]
    fn a_tool_left_out_of_the_handshake_revisions_is_a_warning_with_its_reason() {
        let add = json!({"name": "add", "inputSchema": {"type": "object", "properties": {}},
                         "outputSchema": {"type": "integer"}});
        let greet = json!({"name": "greet", "inputSchema": {"type": "object", "properties": {}}});
        let d = doc(json!([add, greet]), json!([greet]));
        let l = lists(d.clone(), d);
        let w = warnings(&l);
        assert_eq!(
            w[0],
            "tool `add` is left out of 2025-11-25, 2025-06-18 and 2025-03-26: its structured output is not an object, which the handshake revisions do not allow (return a struct to reach their clients)"
        );
        let t = table(&l);
        assert!(t.contains("2026-07-28  2025-11-25"), "{t}");
        let add_row = t.lines().find(|l| l.starts_with("  add")).unwrap();
        assert_eq!(add_row.matches('✓').count(), 1, "{t}");
        assert_eq!(add_row.matches('–').count(), 3, "{t}");
        assert!(apps_note(&l).is_none());
    }

    #[test]
    fn schema_findings_name_their_profile() {
        let tag = json!({"name": "tag", "inputSchema": {"type": "object",
            "properties": {"tags": {"type": "array"}}, "required": ["tags"]}});
        let d = doc(json!([tag]), json!([tag]));
        let w = warnings(&lists(d.clone(), d));
        assert!(
            w.iter()
                .any(|l| l.starts_with("vscode: ") && l.contains("vscode.array-items")),
            "{w:#?}"
        );
        let reports = reports(
            &lists(doc(json!([tag]), json!([])), doc(json!([tag]), json!([]))),
            &[Profile::VsCode],
        );
        assert_eq!(reports[0].tools, 1);
        assert_eq!(reports[0].findings[0].pointer, "/properties/tags");
    }

    #[test]
    fn what_apps_clients_see_besides_is_noted() {
        let greet = json!({"name": "greet", "inputSchema": {"type": "object"}});
        let shown = json!({"name": "greet", "inputSchema": {"type": "object"},
                           "_meta": {"ui": {"resourceUri": "ui://tally"}}});
        let bump = json!({"name": "bump", "inputSchema": {"type": "object"}});
        let plain = doc(json!([greet]), json!([greet]));
        let mut apps = doc(json!([shown, bump]), json!([shown, bump]));
        apps["2026-07-28"]["resources"] = json!([{"uri": "ui://tally", "name": "tally"}]);
        let note = apps_note(&lists(plain, apps)).unwrap();
        assert_eq!(
            note,
            "clients that declare MCP Apps (io.modelcontextprotocol/ui) see more, on every revision:\n  tools with a view (_meta.ui): `greet`\n  tools only views call: `bump`\n  views among the resources: `ui://tally`\n"
        );
    }
}
