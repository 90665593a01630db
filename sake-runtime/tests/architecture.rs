//! The layers of docs/architecture.md, checked on the source, parsed — and the page checked
//! against the source.
//!
//! Every file of `sake-runtime/src` is parsed (syn) and every path it names is resolved to the
//! file that defines what it names: `crate::…`, `super::…` and `self::…` paths, paths that start
//! with a child module's name (`hub::Hub` in `server/mod.rs`) or with a name a `use` brought
//! in, `use` trees, and re-exports followed to the item they re-export (`crate::Service` is
//! `service.rs`'s, `transport::Connection` is `server/front/port.rs`'s). A `pub use` is an import of the
//! file that does it. Items under `#[cfg(test)]` (and files declared by a `#[cfg(test)] mod`)
//! are left out wherever they stand (unit tests may use anything: they build servers to test
//! the parts); everything else counts, in whatever order it comes.
//!
//! The layer table is read from docs/architecture.md ("Layers of the runtime"): the layer of
//! every top-level module, and the modules each one imports. The rules:
//! - every module of the runtime has a row, and every row is a module;
//! - a module imports only modules of its own layer or of layers below (the client only
//!   [`CLIENT_MAY_USE`], being a peer of the server), and its row names exactly the modules it
//!   imports — the page cannot drift;
//! - no files import each other, directly or around a circle, except that a file may name
//!   what its enclosing modules define (a child file uses `super::…`; its parent may use it
//!   in turn): [`circles`];
//! - a transport names only what is *defined* in the port, `server/front/port.rs`, or in a
//!   layer below the server (a name the port re-exported from elsewhere in the engine would be
//!   that file's): no exceptions;
//! - the files of `protocol/` import in one order;
//! - only the revision table (`protocol/version.rs`) names a particular revision or compares
//!   version strings, and only `protocol/` and `server/front/` branch on an era (`Era::…`).
//!
//! The checker is tested too: synthetic crates and mutations of the real one that break each
//! rule, in the ways earlier checkers missed, must be caught.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::visit::Visit;

/// What the client may use besides itself: it is a peer of the server, not a user of it.
const CLIENT_MAY_USE: &[&str] = &["limits", "protocol", "auth", "net", "otel"];

/// The engine's port: the one file of `server/` whose items the transports may name.
const PORT: &str = "server/front/port.rs";

/// Where an era may be branched on (`Era::Modern`, `Era::Legacy`).
const ERA_MAY_BRANCH: &[&str] = &["protocol", "server/front"];

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
    ("skills", 3),
    ("apps", 3),
    ("meta", 4),
    ("render", 5),
];

/// A source file: its path under `src/` (`/`-separated) and its text.
#[derive(Clone)]
struct Source {
    path: String,
    text: String,
}

fn sources() -> Vec<Source> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<Source>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("inside src");
                out.push(Source {
                    path: rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/"),
                    text: std::fs::read_to_string(&path).expect("readable"),
                });
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    std::fs::read_to_string(path).expect("docs/architecture.md is readable")
}

/// Synthetic sources, for the checker's own tests: `("path", "text")`.
fn synthetic(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(path, text)| Source {
            path: (*path).to_owned(),
            text: (*text).to_owned(),
        })
        .collect()
}

/// The module path of a file: `server/front/mod.rs` → `server::front`, `lib.rs` → root.
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.split('/').map(str::to_owned).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts
}

/// The top-level module a file belongs to (`lib` for `lib.rs`).
fn top(file: &str) -> String {
    module_path(file)
        .first()
        .cloned()
        .unwrap_or_else(|| "lib".to_owned())
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| matches!(&m, syn::Meta::Path(p) if p.is_ident("test")))
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Use(u) => &u.attrs,
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Struct(s) => &s.attrs,
        syn::Item::Enum(e) => &e.attrs,
        syn::Item::Union(u) => &u.attrs,
        syn::Item::Const(c) => &c.attrs,
        syn::Item::Static(s) => &s.attrs,
        syn::Item::Trait(t) => &t.attrs,
        syn::Item::Type(t) => &t.attrs,
        syn::Item::Macro(m) => &m.attrs,
        syn::Item::ExternCrate(e) => &e.attrs,
        _ => &[],
    }
}

/// The leaves of a `use` tree: (the path as written, the name it brings in, whether a glob).
fn use_leaves(tree: &syn::UseTree) -> Vec<(Vec<String>, String, bool, usize)> {
    fn walk(
        prefix: &mut Vec<String>,
        tree: &syn::UseTree,
        out: &mut Vec<(Vec<String>, String, bool, usize)>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let line = n.ident.span().start().line;
                if n.ident == "self" {
                    let name = prefix.last().cloned().unwrap_or_default();
                    out.push((prefix.clone(), name, false, line));
                } else {
                    let mut full = prefix.clone();
                    full.push(n.ident.to_string());
                    out.push((full, n.ident.to_string(), false, line));
                }
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                out.push((
                    full,
                    r.rename.to_string(),
                    false,
                    r.ident.span().start().line,
                ));
            }
            syn::UseTree::Glob(g) => {
                out.push((
                    prefix.clone(),
                    "*".to_owned(),
                    true,
                    g.star_token.span.start().line,
                ));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    walk(prefix, t, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&mut Vec::new(), tree, &mut out);
    out
}

/// A module: a file's, or an inline one inside a file.
#[derive(Clone, Default)]
struct Scope {
    /// The file it is written in.
    file: String,
    /// The modules declared in it (files or inline), test modules left out.
    children: BTreeSet<String>,
    /// The items defined in it.
    items: BTreeSet<String>,
    /// The names its `use` declarations bring in → the path as written.
    uses: BTreeMap<String, Vec<String>>,
    /// Its glob imports, as written.
    globs: Vec<Vec<String>>,
}

/// How a file names something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// A path in code.
    Path,
    /// A private `use`.
    Use,
    /// A `use` that re-exports (`pub`, `pub(crate)`, …): an import of the file that does it.
    Reexport,
    /// A glob import.
    Glob,
}

/// A path a file names, as written, with the module it is written in.
struct Ref {
    scope: Vec<String>,
    written: Vec<String>,
    line: usize,
    via: Via,
}

/// What one file says: the paths it names, its era branches and revision decisions.
#[derive(Default)]
struct Facts {
    refs: Vec<Ref>,
    era_branches: Vec<usize>,
    revision_decisions: Vec<usize>,
}

struct Collector<'a> {
    module: Vec<String>,
    facts: &'a mut Facts,
}

impl Collector<'_> {
    fn note(&mut self, written: Vec<String>, line: usize, via: Via) {
        if written.len() >= 2 && written[written.len() - 2] == "Era" {
            let variant = &written[written.len() - 1];
            if variant == "Modern" || variant == "Legacy" {
                self.facts.era_branches.push(line);
            }
        }
        if written
            .iter()
            .any(|s| s.starts_with("V20") || s == "is_modern")
            && written.iter().any(|s| s == "Revision" || s == "is_modern")
        {
            self.facts.revision_decisions.push(line);
        }
        self.facts.refs.push(Ref {
            scope: self.module.clone(),
            written,
            line,
            via,
        });
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_attrs(item)) {
            return;
        }
        if let syn::Item::Mod(m) = item
            && m.content.is_some()
        {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item(self, item);
            self.module.pop();
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        if let syn::Stmt::Local(l) = stmt
            && is_cfg_test(&l.attrs)
        {
            return;
        }
        syn::visit::visit_stmt(self, stmt);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let reexport = !matches!(u.vis, syn::Visibility::Inherited);
        for (written, _, glob, line) in use_leaves(&u.tree) {
            let via = match (glob, reexport) {
                (true, _) => Via::Glob,
                (false, true) => Via::Reexport,
                (false, false) => Via::Use,
            };
            self.note(written, line, via);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let written: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = path
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.note(written, line, Via::Path);
        syn::visit::visit_path(self, path);
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(crate)`, `pub(in crate::server)`: who may see an item, no import.
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        if ident == "is_modern" {
            self.facts
                .revision_decisions
                .push(ident.span().start().line);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Macro bodies are tokens: read the paths in them as expressions where they parse.
        if let Ok(expr) = mac.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for e in &expr {
                self.visit_expr(e);
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// The declarations of a module and of the inline modules in it; the test modules it declares
/// go to `tests`.
fn declare(
    items: &[syn::Item],
    module: &[String],
    file: &str,
    scopes: &mut BTreeMap<Vec<String>, Scope>,
    tests: &mut Vec<Vec<String>>,
) {
    let mut scope = Scope {
        file: file.to_owned(),
        ..Scope::default()
    };
    for item in items {
        if is_cfg_test(item_attrs(item)) {
            if let syn::Item::Mod(m) = item {
                let mut child = module.to_vec();
                child.push(m.ident.to_string());
                tests.push(child);
            }
            continue;
        }
        let ident = match item {
            syn::Item::Mod(m) => {
                scope.children.insert(m.ident.to_string());
                if let Some((_, inner)) = &m.content {
                    let mut child = module.to_vec();
                    child.push(m.ident.to_string());
                    declare(inner, &child, file, scopes, tests);
                }
                None
            }
            syn::Item::Use(u) => {
                for (written, name, glob, _) in use_leaves(&u.tree) {
                    if glob {
                        scope.globs.push(written);
                    } else if name != "_" {
                        scope.uses.insert(name, written);
                    }
                }
                None
            }
            syn::Item::Struct(i) => Some(i.ident.to_string()),
            syn::Item::Enum(i) => Some(i.ident.to_string()),
            syn::Item::Union(i) => Some(i.ident.to_string()),
            syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
            syn::Item::Trait(i) => Some(i.ident.to_string()),
            syn::Item::Type(i) => Some(i.ident.to_string()),
            syn::Item::Const(i) => Some(i.ident.to_string()),
            syn::Item::Static(i) => Some(i.ident.to_string()),
            syn::Item::Macro(i) => i.ident.as_ref().map(ToString::to_string),
            _ => None,
        };
        if let Some(i) = ident {
            scope.items.insert(i);
        }
    }
    scopes.insert(module.to_vec(), scope);
}

/// One file, parsed: its modules, the test modules it declares, what it says.
struct Parsed {
    scopes: Vec<(Vec<String>, Scope)>,
    tests: Vec<Vec<String>>,
    facts: std::sync::Arc<Facts>,
}

/// A file parsed once per text (the mutation tests change one file of the crate).
fn parsed(source: &Source) -> std::sync::Arc<Parsed> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Seen = HashMap<(String, String), Arc<Parsed>>;
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    let key = (source.path.clone(), source.text.clone());
    let seen = SEEN.get_or_init(Default::default);
    if let Some(p) = seen.lock().expect("not poisoned").get(&key) {
        return p.clone();
    }
    let file = syn::parse_file(&source.text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", source.path));
    let module = module_path(&source.path);
    let mut scopes = BTreeMap::new();
    let mut tests = Vec::new();
    declare(&file.items, &module, &source.path, &mut scopes, &mut tests);
    let mut facts = Facts::default();
    Collector {
        module,
        facts: &mut facts,
    }
    .visit_file(&file);
    let p = Arc::new(Parsed {
        scopes: scopes.into_iter().collect(),
        tests,
        facts: Arc::new(facts),
    });
    seen.lock().expect("not poisoned").insert(key, p.clone());
    p
}

/// Where a path leads: the file that defines what it names, and the path it ends up as.
struct Target {
    file: String,
    /// It names a module, not an item in one.
    module: bool,
    /// The item of the defining module it names (`Frame` for `Frame::Message`).
    item: String,
}

/// An import of one file by another.
struct Edge {
    from: String,
    line: usize,
    written: Vec<String>,
    to: Target,
}

/// The crate, parsed: its modules, and every import of one file by another.
struct Crate {
    scopes: BTreeMap<Vec<String>, Scope>,
    /// The files checked (test files left out), with what each says.
    files: BTreeMap<String, std::sync::Arc<Facts>>,
    edges: Vec<Edge>,
}

impl Crate {
    fn parse(sources: &[Source]) -> Crate {
        let parsed: Vec<_> = sources.iter().map(parsed).collect();
        let mut scopes = BTreeMap::new();
        let tests: Vec<&Vec<String>> = parsed.iter().flat_map(|p| &p.tests).collect();
        let mut files = BTreeMap::new();
        for (source, p) in sources.iter().zip(&parsed) {
            let module = module_path(&source.path);
            if tests.iter().any(|t| module.starts_with(t)) {
                continue;
            }
            scopes.extend(p.scopes.iter().cloned());
            files.insert(source.path.clone(), p.facts.clone());
        }
        let mut krate = Crate {
            scopes,
            files,
            edges: Vec::new(),
        };
        let mut edges = Vec::new();
        for (from, facts) in &krate.files {
            for r in &facts.refs {
                let Some(abs) = krate.resolve(&r.scope, &r.written, r.via == Via::Path, 0) else {
                    continue;
                };
                let Some(to) = krate.target(&abs) else {
                    continue;
                };
                // Importing a module's name is no use of its file: the paths through it are
                // (resolved through the module's `use` declarations; a `use` inside a function
                // is not among them, so it counts itself).
                if to.module
                    && r.via == Via::Use
                    && krate
                        .scopes
                        .get(&r.scope)
                        .is_some_and(|s| s.uses.values().any(|w| *w == r.written))
                {
                    continue;
                }
                if &to.file != from {
                    edges.push(Edge {
                        from: from.clone(),
                        line: r.line,
                        written: r.written.clone(),
                        to,
                    });
                }
            }
        }
        krate.edges = edges;
        krate
    }

    /// The absolute path of a path as written in `scope`, or `None` for one that does not lead
    /// into the crate (an external crate, a local name). A path of one segment is never a
    /// child module (`tasks` alone is a variable): `bare` says whether the path is in code.
    fn resolve(
        &self,
        scope: &[String],
        written: &[String],
        bare: bool,
        depth: u8,
    ) -> Option<Vec<String>> {
        if depth > 8 {
            return None;
        }
        let (first, rest) = written.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => {
                let mut m = scope.to_vec();
                m.pop()?;
                m
            }
            name => {
                let s = self.scopes.get(scope)?;
                if s.children.contains(name) && !(bare && rest.is_empty()) {
                    let mut abs = scope.to_vec();
                    abs.extend(written.iter().cloned());
                    return Some(abs);
                }
                let target = s.uses.get(name)?;
                if target.as_slice() == [name.to_owned()] {
                    return None;
                }
                let mut abs = self.resolve(scope, target, false, depth + 1)?;
                abs.extend(rest.iter().cloned());
                return Some(abs);
            }
        };
        let mut rest = rest;
        while let Some((s, r)) = rest.split_first() {
            if s != "super" {
                break;
            }
            base.pop()?;
            rest = r;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what an absolute path names, following `use` declarations (and
    /// globs) to the item.
    fn target(&self, abs: &[String]) -> Option<Target> {
        let mut path = abs.to_vec();
        'follow: for _ in 0..16 {
            // The longest prefix that is a module.
            let n = (0..=path.len())
                .rev()
                .find(|n| self.scopes.contains_key(&path[..*n]))?;
            let module = path[..n].to_vec();
            let scope = &self.scopes[&module];
            let here = |module: bool| Target {
                file: scope.file.clone(),
                module,
                item: path.get(n).cloned().unwrap_or_default(),
            };
            let Some(name) = path.get(n) else {
                return Some(here(true));
            };
            if scope.items.contains(name) {
                return Some(here(false));
            }
            if let Some(written) = scope.uses.get(name) {
                let Some(mut next) = self.resolve(&module, written, false, 0) else {
                    // An external crate's item, re-exported: the module's own.
                    return Some(here(false));
                };
                next.extend(path[n + 1..].iter().cloned());
                if next == path {
                    return Some(here(false));
                }
                path = next;
                continue;
            }
            for glob in &scope.globs {
                if let Some(from) = self.resolve(&module, glob, false, 0)
                    && let Some(s) = self.scopes.get(&from)
                    && (s.items.contains(name)
                        || s.uses.contains_key(name)
                        || s.children.contains(name))
                {
                    let mut next = from;
                    next.extend(path[n..].iter().cloned());
                    path = next;
                    continue 'follow;
                }
            }
            // Something the checker cannot follow (made by a macro): the module's.
            return Some(here(false));
        }
        None
    }
}

/// The layer table of docs/architecture.md: module → its row.
struct Table {
    rows: BTreeMap<String, Row>,
}

struct Row {
    layer: u8,
    /// The modules its row says it imports.
    imports: BTreeSet<String>,
    /// Its line in the page.
    line: usize,
}

/// A module as the table writes it: `` `server/` ``, `` `limits.rs` ``, `` `lib.rs` `` → its
/// name.
fn table_name(cell: &str) -> Option<String> {
    let cell = cell.trim().trim_matches('`');
    let name = cell
        .strip_suffix('/')
        .or_else(|| cell.strip_suffix(".rs"))?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .then(|| name.to_owned())
}

/// Reads the first table under "## Layers of the runtime": `| layer | module | what it holds
/// | imports |`, imports a list of `` `module` `` or `—`.
fn parse_table(doc: &str) -> Result<Table, String> {
    let mut in_section = false;
    let mut rows = BTreeMap::new();
    let mut seen_table = false;
    for (k, line) in doc.lines().enumerate() {
        if line.starts_with("## ") {
            in_section = line.trim() == "## Layers of the runtime";
            continue;
        }
        if !in_section {
            continue;
        }
        let line = line.trim();
        if !line.starts_with('|') {
            if seen_table {
                break;
            }
            continue;
        }
        seen_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Ok(layer) = cells[0].parse::<u8>() else {
            continue; // the header and its rule
        };
        let at = k + 1;
        let (Some(module), Some(imports)) = (cells.get(1), cells.last()) else {
            return Err(format!("docs/architecture.md:{at}: a row needs four cells"));
        };
        let name = table_name(module).ok_or_else(|| {
            format!(
                "docs/architecture.md:{at}: `{module}` is no module (write `name.rs` or `name/`)"
            )
        })?;
        let imports = if *imports == "—" {
            BTreeSet::new()
        } else {
            imports
                .split(',')
                .map(|i| {
                    let i = i.trim();
                    i.strip_prefix('`')
                        .and_then(|i| i.strip_suffix('`'))
                        .map(str::to_owned)
                        .ok_or_else(|| {
                            format!("docs/architecture.md:{at}: imports are `module`, …: `{i}`")
                        })
                })
                .collect::<Result<_, _>>()?
        };
        if rows
            .insert(
                name.clone(),
                Row {
                    layer,
                    imports,
                    line: at,
                },
            )
            .is_some()
        {
            return Err(format!("docs/architecture.md:{at}: `{name}` has two rows"));
        }
    }
    if rows.is_empty() {
        return Err(
            "docs/architecture.md has no layer table under \"## Layers of the runtime\"".into(),
        );
    }
    Ok(Table { rows })
}

/// Files that import each other, directly or around a circle. An import of a file by one of
/// the files inside its module (`server/tasks.rs` naming `server/mod.rs`'s `Shared`,
/// `server/front/legacy.rs` naming it too) is allowed and is no part of a circle: a module's
/// files may use what the modules around them define. Every other import counts: siblings,
/// cousins, a parent naming its child, re-exports included.
fn circles(krate: &Crate) -> Vec<String> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in &krate.edges {
        let from = module_path(&e.from);
        let to = module_path(&e.to.file);
        if from.len() > to.len() && from.starts_with(&to) {
            continue; // a file naming what an enclosing module defines
        }
        graph.entry(&e.from).or_default().insert(&e.to.file);
    }
    // Tarjan's strongly connected components.
    struct Tarjan<'a> {
        graph: &'a BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on.insert(v);
            for &w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
        .into_iter()
        .map(|mut c| {
            c.sort_unstable();
            let lines: Vec<String> = krate
                .edges
                .iter()
                .filter(|e| {
                    c.contains(&e.from.as_str())
                        && c.contains(&e.to.file.as_str())
                        && graph
                            .get(e.from.as_str())
                            .is_some_and(|s| s.contains(e.to.file.as_str()))
                })
                .map(|e| format!("  {}:{} names {}", e.from, e.line, e.written.join("::")))
                .collect();
            format!("{}\n{}", c.join(" <-> "), lines.join("\n"))
        })
        .collect()
}

/// The modules each module imports, as computed from the source.
fn imports(krate: &Crate) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in krate.files.keys() {
        out.entry(top(file)).or_default();
    }
    for e in &krate.edges {
        let (from, to) = (top(&e.from), top(&e.to.file));
        if from != to {
            out.entry(from).or_default().insert(to);
        }
    }
    out
}

/// Every rule broken in `sources` by the table `table`.
fn problems(krate: &Crate, table: &Table) -> Vec<String> {
    let mut out = Vec::new();
    let layer = |m: &str| table.rows.get(m).map(|r| r.layer);
    // Every module has a row, every row is a module, every row says what its module imports.
    let computed = imports(krate);
    for (module, row) in &table.rows {
        if !computed.contains_key(module) {
            out.push(format!(
                "docs/architecture.md:{}: `{module}` has a row but no file in src",
                row.line
            ));
        }
    }
    for (module, theirs) in &computed {
        let Some(row) = table.rows.get(module) else {
            out.push(format!(
                "`{module}` has no row in the layer table of docs/architecture.md"
            ));
            continue;
        };
        if &row.imports != theirs {
            let list = |s: &BTreeSet<String>| {
                if s.is_empty() {
                    "—".to_owned()
                } else {
                    s.iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            };
            out.push(format!(
                "docs/architecture.md:{}: the row of `{module}` says it imports {}; it imports {}",
                row.line,
                list(&row.imports),
                list(theirs)
            ));
        }
    }
    for e in &krate.edges {
        let (own, theirs) = (top(&e.from), top(&e.to.file));
        let at = format!("{}:{}", e.from, e.line);
        let named = e.written.join("::");
        let (Some(own_layer), Some(their_layer)) = (layer(&own), layer(&theirs)) else {
            continue; // reported above
        };
        if own == "client" {
            if theirs != "client" && !CLIENT_MAY_USE.contains(&theirs.as_str()) {
                out.push(format!("{at}: the client uses {named} ({})", e.to.file));
            }
        } else if their_layer > own_layer {
            out.push(format!(
                "{at} (layer {own_layer}) imports {named}, defined in {} (layer {their_layer})",
                e.to.file
            ));
        }
        // A transport names only what the port or a layer below the server defines.
        if own == "transport" && theirs == "server" && e.to.file != PORT {
            out.push(format!(
                "{at}: a transport names {named}: `{}` is defined in {} (only {PORT}, the engine's port, is theirs)",
                e.to.item, e.to.file
            ));
        }
    }
    for (file, facts) in &krate.files {
        if !ERA_MAY_BRANCH.iter().any(|p| file.starts_with(p)) {
            for line in &facts.era_branches {
                out.push(format!(
                    "{file}:{line}: branches on an era outside protocol/ and server/front/"
                ));
            }
        }
        if file != "protocol/version.rs" {
            for line in &facts.revision_decisions {
                out.push(format!(
                    "{file}:{line}: decides by revision outside protocol/version.rs (make it a column of the revision table)"
                ));
            }
        }
    }
    out.extend(protocol_problems(krate));
    out
}

/// The protocol files that import a file of their own rank or above.
fn protocol_problems(krate: &Crate) -> Vec<String> {
    // A directory of `protocol/` (`types/`) has its rank in all its files.
    let rank = |file: &str| {
        let name = file.strip_prefix("protocol/")?.strip_suffix(".rs")?;
        let name = name.split('/').next()?;
        PROTOCOL_ORDER
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| *r)
    };
    let mut out = Vec::new();
    for file in krate.files.keys() {
        if file.starts_with("protocol/") && rank(file).is_none() {
            out.push(format!("{file} has no rank in PROTOCOL_ORDER"));
        }
    }
    for e in &krate.edges {
        let unit = |file: &str| file.split('/').take(2).collect::<Vec<_>>().join("/");
        if let (Some(own), Some(theirs)) = (rank(&e.from), rank(&e.to.file))
            && e.from != "protocol/mod.rs"
            && unit(&e.from) != unit(&e.to.file)
            && theirs >= own
        {
            out.push(format!(
                "{}:{} uses {} ({})",
                e.from,
                e.line,
                e.written.join("::"),
                e.to.file
            ));
        }
    }
    out
}

/// Everything wrong with `sources` against the page `doc`, circles and version strings
/// included.
fn check(sources: &[Source], doc: &str) -> Vec<String> {
    let table = match parse_table(doc) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };
    let krate = Crate::parse(sources);
    let mut all = problems(&krate, &table);
    all.extend(
        circles(&krate)
            .into_iter()
            .map(|c| format!("import circle: {c}")),
    );
    for source in sources {
        if source.path != "protocol/version.rs" && krate.files.contains_key(&source.path) {
            all.extend(version_string_comparisons(source));
        }
    }
    all
}

fn version_string_comparisons(source: &Source) -> Vec<String> {
    struct Finder {
        lines: Vec<usize>,
    }
    fn is_date(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 10
            && b.iter().enumerate().all(|(k, c)| {
                if k == 4 || k == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            })
    }
    fn date_lit(e: &syn::Expr) -> Option<usize> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) if is_date(&s.value()) => Some(s.span().start().line),
            _ => None,
        }
    }
    impl<'ast> Visit<'ast> for Finder {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            let test = match item {
                syn::Item::Mod(m) => is_cfg_test(&m.attrs),
                syn::Item::Fn(f) => is_cfg_test(&f.attrs),
                _ => false,
            };
            if !test {
                syn::visit::visit_item(self, item);
            }
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if matches!(b.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_))
                && let Some(line) = date_lit(&b.left).or_else(|| date_lit(&b.right))
            {
                self.lines.push(line);
            }
            syn::visit::visit_expr_binary(self, b);
        }
        fn visit_arm(&mut self, arm: &'ast syn::Arm) {
            fn pat_dates(p: &syn::Pat, out: &mut Vec<usize>) {
                match p {
                    syn::Pat::Lit(syn::PatLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) if is_date(&s.value()) => out.push(s.span().start().line),
                    syn::Pat::Or(o) => o.cases.iter().for_each(|c| pat_dates(c, out)),
                    _ => {}
                }
            }
            pat_dates(&arm.pat, &mut self.lines);
            syn::visit::visit_arm(self, arm);
        }
    }
    let Ok(file) = syn::parse_file(&source.text) else {
        return Vec::new();
    };
    let mut f = Finder { lines: Vec::new() };
    f.visit_file(&file);
    f.lines
        .into_iter()
        .map(|l| {
            format!(
                "{}:{l}: compares a version string outside protocol/version.rs",
                source.path
            )
        })
        .collect()
}

#[test]
fn the_source_keeps_the_rules_and_the_page_says_so() {
    let all: Vec<String> = check(&sources(), &doc())
        .into_iter()
        .filter(|p| !p.starts_with("import circle"))
        .collect();
    assert!(all.is_empty(), "{}", all.join("\n"));
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let found = circles(&Crate::parse(&sources()));
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// Applies `mutate` to the file at `path` and returns what the checker says.
fn mutated(path: &str, mutate: impl Fn(&str) -> String) -> Vec<String> {
    let mut sources = sources();
    let s = sources
        .iter_mut()
        .find(|s| s.path == path)
        .unwrap_or_else(|| panic!("no {path}"));
    s.text = mutate(&s.text);
    check(&sources, &doc())
}

#[test]
fn an_upward_import_after_a_test_module_is_caught() {
    let found = mutated("compat/mod.rs", |t| {
        assert!(
            t.contains("#[cfg(test)]"),
            "compat/mod.rs has a test module"
        );
        format!("{t}\n#[allow(unused_imports)]\nuse crate::service::Server;\n")
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("compat/mod.rs") && p.contains("crate::service::Server")),
        "{found:?}"
    );
}

#[test]
fn an_upward_import_through_a_root_re_export_is_caught() {
    let found = mutated("server/mod.rs", |t| {
        format!("{t}\n#[allow(unused_imports)]\nuse crate::Service;\n")
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("server/mod.rs") && p.contains("crate::Service")),
        "{found:?}"
    );
}

#[test]
fn an_era_branch_outside_the_front_is_caught() {
    let found = mutated("server/dispatch/mod.rs", |t| {
        format!(
            "{t}\n#[allow(dead_code)]\nfn branch(r: crate::protocol::Revision) -> bool {{ r.era() == crate::protocol::Era::Modern }}\n"
        )
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("server/dispatch/mod.rs") && p.contains("branches on an era")),
        "{found:?}"
    );
}

#[test]
fn a_transport_reaching_past_the_port_is_caught() {
    let found = mutated("transport/stdio.rs", |t| {
        format!("{t}\n#[allow(unused_imports)]\nuse crate::server::Shared;\n")
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("transport/stdio.rs") && p.contains("server::Shared")),
        "{found:?}"
    );
    // Through `super::` too.
    let found = mutated("transport/http/sse.rs", |t| {
        format!(
            "{t}\n#[allow(unused_imports)]\nuse super::super::super::server::session::Session;\n"
        )
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("transport/http/sse.rs") && p.contains("server/session.rs")),
        "{found:?}"
    );
}

#[test]
fn an_engine_item_re_exported_by_the_real_port_is_caught() {
    let mut sources = sources();
    for s in &mut sources {
        if s.path == "server/front/port.rs" {
            s.text
                .push_str("\n#[allow(unused_imports)]\npub(crate) use crate::server::Shared;\n");
        }
        if s.path == "transport/stdio.rs" {
            s.text.push_str(
                "\n#[allow(dead_code)]\nfn f(_: &crate::server::front::port::Shared) {}\n",
            );
        }
    }
    let found = check(&sources, &doc());
    assert!(
        found.iter().any(|p| p.contains("transport/stdio.rs")
            && p.contains("port::Shared")
            && p.contains("defined in server/mod.rs")),
        "{found:?}"
    );
}

#[test]
fn a_revision_compared_outside_the_table_is_caught() {
    let found = mutated("server/dispatch/mod.rs", |t| {
        format!(
            "{t}\n#[allow(dead_code)]\nfn old(v: &str) -> bool {{ v == \"2025-06-18\" }}\n#[allow(dead_code)]\nfn named(r: crate::protocol::Revision) -> bool {{ r == crate::protocol::Revision::V2025_06_18 }}\n"
        )
    });
    let here: Vec<_> = found
        .iter()
        .filter(|p| p.contains("server/dispatch/mod.rs"))
        .collect();
    assert_eq!(here.len(), 2, "{found:?}");
}

#[test]
fn a_circle_is_caught() {
    let found = mutated("handler/state.rs", |t| {
        format!("{t}\n#[allow(unused_imports)]\nuse super::context::Context;\n")
    });
    assert!(
        found
            .iter()
            .any(|c| c.starts_with("import circle: handler/context.rs <-> handler/state.rs")),
        "{found:?}"
    );
}

#[test]
fn module_paths_follow_the_files() {
    assert_eq!(module_path("server/front/mod.rs"), ["server", "front"]);
    assert_eq!(
        module_path("server/front/port.rs"),
        ["server", "front", "port"]
    );
    assert!(module_path("lib.rs").is_empty());
}

// The checker on synthetic crates: a small one that keeps every rule (a parent and its child
// importing each other included), and one rule broken at a time, in the ways earlier
// checkers did not see.

/// The page of the synthetic crate.
const MINI_DOC: &str = "# Mini

## Layers of the runtime

| layer | module | what it holds | imports |
|---|---|---|---|
| 0 | `base.rs` | the bottom | — |
| 5 | `server/` | the engine | `base` |
| 6 | `transport/` | a transport | `base`, `server` |
| 9 | `lib.rs` | the root | — |

## Next
";

/// A crate that keeps the rules: `server/mod.rs` and its port import each other (a module and
/// the files it declares are one unit); the transport names the port's own items and the base.
fn mini() -> Vec<Source> {
    synthetic(&[
        (
            "lib.rs",
            "pub mod base;\npub(crate) mod server;\npub mod transport;\n",
        ),
        ("base.rs", "pub struct Base;\n"),
        (
            "server/mod.rs",
            "pub(crate) mod front;\n\
             pub(crate) struct Shared;\n\
             pub(crate) fn open() -> front::port::Connection { front::port::Connection(crate::base::Base) }\n",
        ),
        ("server/front/mod.rs", "pub(crate) mod port;\n"),
        (
            "server/front/port.rs",
            "use crate::server::Shared;\n\
             pub(crate) struct Connection(pub crate::base::Base);\n\
             pub(crate) fn engine() -> Shared { Shared }\n",
        ),
        (
            "transport/mod.rs",
            "use crate::server::front::port::{self, Connection};\n\
             pub fn serve(_: Connection, _: crate::base::Base) { let _ = port::engine; }\n",
        ),
    ])
}

/// `mini()` with files replaced, added, or (with no text) removed.
fn mini_with(changes: &[(&str, &str)]) -> Vec<String> {
    let mut sources = mini();
    for (path, text) in changes {
        if text.is_empty() {
            sources.retain(|s| s.path != *path);
            continue;
        }
        match sources.iter_mut().find(|s| s.path == *path) {
            Some(s) => s.text = (*text).to_owned(),
            None => sources.extend(synthetic(&[(path, text)])),
        }
    }
    check(&sources, MINI_DOC)
}

#[test]
fn the_synthetic_crate_keeps_the_rules() {
    let found = check(&mini(), MINI_DOC);
    assert!(found.is_empty(), "{found:#?}");
    // And its parent and child do import each other, seen and allowed.
    let krate = Crate::parse(&mini());
    let edge = |from: &str, to: &str| {
        krate
            .edges
            .iter()
            .any(|e| e.from == from && e.to.file == to)
    };
    assert!(edge("server/mod.rs", "server/front/port.rs"));
    assert!(edge("server/front/port.rs", "server/mod.rs"));
}

const SIBLINGS: &str = "pub(crate) mod front;\npub(crate) mod a;\npub(crate) mod b;\n\
    pub(crate) struct Shared;\n\
    pub(crate) fn open() -> front::port::Connection { front::port::Connection(crate::base::Base) }\n";

#[test]
fn a_mutual_import_between_sibling_files_is_caught() {
    let found = mini_with(&[
        ("server/mod.rs", SIBLINGS),
        (
            "server/a.rs",
            "use super::b::B;\npub(crate) struct A(pub B);\n",
        ),
        (
            "server/b.rs",
            "pub(crate) struct B;\npub(crate) fn f(_: &super::a::A) {}\n",
        ),
    ]);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("import circle: server/a.rs <-> server/b.rs")),
        "{found:#?}"
    );
}

#[test]
fn a_mutual_import_through_a_re_export_is_caught() {
    // `a` only re-exports `b`'s item: still an import of `b`.
    let found = mini_with(&[
        ("server/mod.rs", SIBLINGS),
        (
            "server/a.rs",
            "pub(crate) use super::b::B;\npub(crate) struct A;\n",
        ),
        (
            "server/b.rs",
            "pub(crate) struct B;\npub(crate) fn f(_: &super::a::A) {}\n",
        ),
    ]);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("import circle: server/a.rs <-> server/b.rs")),
        "{found:#?}"
    );
}

#[test]
fn a_circle_between_cousins_is_caught() {
    // `front/port.rs` names its parent's sibling `a`, which names the port: no enclosing
    // module in between, so a circle.
    let found = mini_with(&[
        ("server/mod.rs", SIBLINGS),
        (
            "server/a.rs",
            "pub(crate) struct A(pub super::front::port::Connection);\n",
        ),
        ("server/b.rs", "pub(crate) struct B;\n"),
        (
            "server/front/port.rs",
            "pub(crate) struct Connection(pub crate::base::Base);\n\
             pub(crate) fn engine() -> super::super::Shared { super::super::Shared }\n\
             pub(crate) fn a(_: crate::server::a::A) {}\n",
        ),
    ]);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("import circle: server/a.rs <-> server/front/port.rs")),
        "{found:#?}"
    );
}

#[test]
fn a_server_item_re_exported_through_the_port_and_named_by_a_transport_is_caught() {
    for reexport in [
        "pub(crate) use crate::server::Shared;",
        "pub(crate) use super::super::Shared;",
        "pub(crate) use crate::server::Shared as Engine;",
    ] {
        let name = if reexport.contains("Engine") {
            "Engine"
        } else {
            "Shared"
        };
        let found = mini_with(&[
            (
                "server/front/port.rs",
                &format!(
                    "{reexport}\npub(crate) struct Connection(pub crate::base::Base);\n\
                     pub(crate) fn engine() {{}}\n"
                ),
            ),
            (
                "transport/mod.rs",
                &format!(
                    "use crate::server::front::port::{{self, Connection}};\n\
                     pub fn serve(_: Connection, _: crate::base::Base) {{ let _ = port::engine; }}\n\
                     pub(crate) fn held(_: &port::{name}) {{}}\n"
                ),
            ),
        ]);
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("transport/mod.rs:3:")
                    && p.contains("defined in server/mod.rs")),
            "{reexport}: {found:#?}"
        );
    }
}

#[test]
fn an_upward_import_written_through_a_child_modules_path_is_caught() {
    // `base/mod.rs` (layer 0) names `inner::Shared`: `inner` is its child, which re-exports
    // the server's `Shared`. The path starts with the child's name, not `crate`/`super`/`self`.
    let found = mini_with(&[
        ("base.rs", ""),
        (
            "base/mod.rs",
            "mod inner;\npub struct Base;\npub(crate) fn f(_: inner::Shared) {}\n",
        ),
        ("base/inner.rs", "pub(crate) use crate::server::Shared;\n"),
    ]);
    let found: Vec<_> = found
        .iter()
        .filter(|p| !p.starts_with("import circle"))
        .collect();
    assert!(
        found.iter().any(|p| p.starts_with(
            "base/mod.rs:3 (layer 0) imports inner::Shared, defined in server/mod.rs (layer 5)"
        )),
        "{found:#?}"
    );
}

#[test]
fn an_upward_import_through_a_module_imported_in_a_function_is_caught() {
    let found = mini_with(&[(
        "base.rs",
        "pub struct Base;\npub(crate) fn f() {\n    use crate::server::front;\n    let _ = front::port::engine;\n}\n",
    )]);
    let found: Vec<_> = found
        .iter()
        .filter(|p| !p.starts_with("import circle") && !p.starts_with("docs/"))
        .collect();
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("base.rs:3 (layer 0) imports crate::server::front")),
        "{found:#?}"
    );
}

#[test]
fn a_page_that_drifts_from_the_code_is_caught() {
    // A row that lacks an import.
    let found = check(
        &mini(),
        &MINI_DOC.replace("| `base`, `server` |", "| `server` |"),
    );
    assert_eq!(
        found,
        [
            "docs/architecture.md:9: the row of `transport` says it imports `server`; it imports `base`, `server`"
        ],
    );
    // A module without a row, and a row without a module.
    let mut sources = mini();
    sources.extend(synthetic(&[("extra.rs", "pub struct Extra;\n")]));
    let found = check(
        &sources,
        &MINI_DOC.replace("| 9 |", "| 0 | `gone.rs` | nothing | — |\n| 9 |"),
    );
    assert_eq!(
        found,
        [
            "docs/architecture.md:10: `gone` has a row but no file in src",
            "`extra` has no row in the layer table of docs/architecture.md",
        ],
    );
    // No table at all.
    assert_eq!(
        check(&mini(), "# Mini\n"),
        ["docs/architecture.md has no layer table under \"## Layers of the runtime\""],
    );
}

/// The files and directories a page names (`` `server/front/port.rs` ``, `` `transport/http/` ``,
/// `` `sse.rs` ``) that no file of the repository has: a name under `sake-runtime/src`, the
/// repository root, or, for a bare file name, the end of some path under `src`.
fn missing_files(doc: &str, sources: &[Source], root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (k, line) in doc.lines().enumerate() {
        for (n, token) in line.split('`').enumerate() {
            let is_name = n % 2 == 1
                && !token.is_empty()
                && token
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_/.-".contains(c))
                && (token.ends_with(".rs") || (token.ends_with('/') && token.len() > 1));
            if !is_name {
                continue;
            }
            let dir = token.trim_end_matches('/');
            let found = sources.iter().any(|s| {
                s.path == token
                    || s.path.starts_with(&format!("{dir}/"))
                    || s.path.ends_with(&format!("/{token}"))
                    || (token.ends_with('/') && s.path.contains(&format!("/{dir}/")))
            }) || root.join(token).exists()
                || root.join("sake-runtime").join(token).exists();
            if !found {
                out.push(format!(
                    "docs/architecture.md:{}: `{token}` is no file or directory",
                    k + 1
                ));
            }
        }
    }
    out
}

#[test]
fn every_file_the_page_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sources = sources();
    let found = missing_files(&doc(), &sources, &root);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // And a renamed file is seen.
    let found = missing_files(
        "`server/front/port.rs`, `sse.rs`, `server/gone.rs`, `transport/http/`, `examples/unix_socket.rs`",
        &sources,
        &root,
    );
    assert_eq!(
        found,
        ["docs/architecture.md:1: `server/gone.rs` is no file or directory"]
    );
}
