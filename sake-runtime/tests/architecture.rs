//! The layers of docs/architecture.md, checked on the source, parsed.
//!
//! Every file of `sake-runtime/src` is parsed (syn) and every path it names is resolved to the
//! module that defines it: `crate::…`, `super::…` and `self::…` paths, `use` trees, and names
//! re-exported at the crate root (`crate::Service` is `service`'s). Items under
//! `#[cfg(test)]` are left out wherever they stand (unit tests may use anything: they build
//! servers to test the parts); everything else counts, in whatever order it comes.
//!
//! The rules:
//! - a module names only modules of its own layer or of layers below (the client only the
//!   layers it is allowed, being a peer of the server);
//! - the transports reach the engine only through its port, `server::front::port`;
//! - the files of `protocol/` import in one order;
//! - only the revision table (`protocol/version.rs`) names a particular revision or compares
//!   version strings, and only `protocol/` and `server/front/` branch on an era (`Era::…`).
//!
//! The checker is tested too: mutations that break a rule in the ways an earlier,
//! text-based checker missed must be caught.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The runtime's top-level modules and their layers (0 is the bottom).
const LAYERS: &[(&str, u8)] = &[
    ("signing", 0),
    ("limits", 0),
    ("protocol", 1),
    ("schema", 2),
    ("uri_template", 2),
    ("auth", 2),
    // Outbound HTTP(S) with SSRF protections, and well-known metadata fetching (features
    // `auth`, `client`).
    ("net", 2),
    // OpenTelemetry (feature `otel`): the pipeline, `_meta` propagation, the duration metric.
    ("otel", 2),
    ("handler", 3),
    ("registry", 4),
    // Start-up errors name registry and schema findings.
    ("error", 4),
    // Schema compatibility reports check the registry's tools (feature `compat`).
    ("compat", 4),
    // Task stores and the rules of a task's life.
    ("tasks", 4),
    // Replicas sharing through Redis: a bus (handler's events) and a task store.
    ("redis", 4),
    // Skills (the skills extension): embedded and code-defined skills, their files and
    // directories, built at start-up for the registry.
    ("skills", 4),
    // Server cards and registry listings, generated from the server's identity.
    ("card", 4),
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

/// The one module of the engine the transports may name.
const PORT: &[&str] = &["server", "front", "port"];

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

/// A source file: its path under `src/` and its text.
struct Source {
    path: PathBuf,
    text: String,
}

fn sources() -> Vec<Source> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<Source>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(Source {
                    path: path.strip_prefix(root).expect("inside src").to_path_buf(),
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

/// The module path of a file: `server/front/mod.rs` → `server::front`, `lib.rs` → root.
fn module_path(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| matches!(&m, syn::Meta::Path(p) if p.is_ident("test")))
    })
}

/// Every path a file names, resolved to absolute module paths (`["server", "front", "port",
/// "Connection"]`), with the `Era::` branches and revision decisions it contains.
#[derive(Default)]
struct Names {
    /// Absolute paths named, with the line each is on.
    paths: Vec<(Vec<String>, usize)>,
    /// Absolute paths re-exported (`pub use`, `pub(crate) use`): imports for the layers, but
    /// no use of what they name by the file itself.
    reexports: Vec<(Vec<String>, usize)>,
    /// Lines that branch on an era.
    era_branches: Vec<usize>,
    /// Lines that name a particular revision, or `is_modern`.
    revision_decisions: Vec<usize>,
}

struct Collector<'a> {
    /// The module the code being visited is in (inline modules push onto it).
    module: Vec<String>,
    names: &'a mut Names,
    /// Inside a `use` that re-exports.
    reexporting: bool,
}

impl Collector<'_> {
    /// An absolute path for a path as written, or `None` for one that does not start at the
    /// crate (an external crate, a local name).
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut m = self.module.clone();
                m.pop();
                m
            }
            _ => return None,
        };
        let mut rest = rest;
        while let Some((s, r)) = rest.split_first() {
            if s != "super" {
                break;
            }
            base.pop();
            rest = r;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn note(&mut self, segments: Vec<String>, line: usize) {
        if segments.len() >= 2 && segments[segments.len() - 2] == "Era" {
            let variant = &segments[segments.len() - 1];
            if variant == "Modern" || variant == "Legacy" {
                self.names.era_branches.push(line);
            }
        }
        if segments
            .iter()
            .any(|s| s.starts_with("V20") || s == "is_modern")
            && segments.iter().any(|s| s == "Revision" || s == "is_modern")
        {
            self.names.revision_decisions.push(line);
        }
        if let Some(abs) = self.resolve(&segments) {
            if self.reexporting {
                self.names.reexports.push((abs, line));
            } else {
                self.names.paths.push((abs, line));
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.note(full, n.ident.span().start().line);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.note(full, r.ident.span().start().line);
            }
            syn::UseTree::Glob(g) => {
                self.note(prefix.clone(), g.star_token.span.start().line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_cfg_test(attrs) {
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
        let mut prefix = Vec::new();
        self.reexporting = !matches!(u.vis, syn::Visibility::Inherited);
        self.use_tree(&mut prefix, &u.tree);
        self.reexporting = false;
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = path
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.note(segments, line);
        syn::visit::visit_path(self, path);
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        if ident == "is_modern" {
            self.names
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

/// What one file names, resolved (parsed once per text: the mutation tests change one file).
fn names_of(source: &Source) -> std::sync::Arc<Names> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Seen = HashMap<(PathBuf, String), Arc<Names>>;
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    let key = (source.path.clone(), source.text.clone());
    let seen = SEEN.get_or_init(Default::default);
    if let Some(n) = seen.lock().expect("not poisoned").get(&key) {
        return n.clone();
    }
    let names = Arc::new(parse_names(source));
    seen.lock()
        .expect("not poisoned")
        .insert(key, names.clone());
    names
}

fn parse_names(source: &Source) -> Names {
    let file = syn::parse_file(&source.text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", source.path.display()));
    let mut names = Names::default();
    let mut c = Collector {
        module: module_path(&source.path),
        names: &mut names,
        reexporting: false,
    };
    c.visit_file(&file);
    names
}

/// What the crate root re-exports: a name at the root (`Service`, `bus::EventBus`, …) → the
/// path of what it names.
fn root_exports(sources: &[Source]) -> BTreeMap<Vec<String>, Vec<String>> {
    let lib = sources
        .iter()
        .find(|s| s.path == Path::new("lib.rs"))
        .expect("lib.rs");
    let file = syn::parse_file(&lib.text).expect("lib.rs parses");
    let mut out = BTreeMap::new();
    fn walk(
        items: &[syn::Item],
        module: &mut Vec<String>,
        out: &mut BTreeMap<Vec<String>, Vec<String>>,
    ) {
        for item in items {
            match item {
                syn::Item::Use(u) if matches!(u.vis, syn::Visibility::Public(_)) => {
                    let mut leaves = Vec::new();
                    collect_use(&mut Vec::new(), &u.tree, &mut leaves);
                    for (path, name) in leaves {
                        let mut target = path;
                        if target.first().is_some_and(|s| s == "crate") {
                            target.remove(0);
                        } else {
                            let mut abs = module.clone();
                            abs.extend(target);
                            target = abs;
                        }
                        let mut at = module.clone();
                        at.push(name);
                        out.insert(at, target);
                    }
                }
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        module.push(m.ident.to_string());
                        walk(items, module, out);
                        module.pop();
                    }
                }
                _ => {}
            }
        }
    }
    fn collect_use(
        prefix: &mut Vec<String>,
        tree: &syn::UseTree,
        out: &mut Vec<(Vec<String>, String)>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                collect_use(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                out.push((full, n.ident.to_string()));
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                out.push((full, r.rename.to_string()));
            }
            syn::UseTree::Glob(_) => {
                out.push((prefix.clone(), "*".to_owned()));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    collect_use(prefix, t, out);
                }
            }
        }
    }
    walk(&file.items, &mut Vec::new(), &mut out);
    out
}

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The top-level module an absolute path ends up in, following the root's re-exports.
fn home(path: &[String], exports: &BTreeMap<Vec<String>, Vec<String>>) -> Option<String> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let first = path.first()?;
        if layer(first).is_some() {
            return Some(first.clone());
        }
        // The longest re-exported prefix names where it comes from.
        let hit = (1..=path.len())
            .rev()
            .find_map(|n| exports.get(&path[..n]).map(|t| (n, t.clone())));
        let (n, target) = hit?;
        let mut next = target;
        next.extend(path[n..].iter().cloned());
        path = next;
    }
    None
}

/// Every rule broken in `sources`.
fn problems(sources: &[Source]) -> Vec<String> {
    let exports = root_exports(sources);
    let mut out = Vec::new();
    let mut unknown = BTreeSet::new();
    for source in sources {
        let module = module_path(&source.path);
        let own = module.first().cloned().unwrap_or_else(|| "lib".to_owned());
        let own_layer = layer(&own);
        if own_layer.is_none() {
            unknown.insert(own.clone());
            continue;
        }
        let own_layer = own_layer.unwrap_or(0);
        let names = names_of(source);
        let at = |line: usize| format!("{}:{line}", source.path.display());
        for (path, line) in names.paths.iter().chain(&names.reexports) {
            if path.is_empty() {
                continue;
            }
            let Some(theirs) = home(path, &exports) else {
                // Items defined in lib.rs itself (`__private`, the inline `bus` module) are
                // the root's; anything else unresolved is a path the checker cannot place.
                if own != "lib" {
                    out.push(format!(
                        "{}: crate::{} resolves to no module of LAYERS",
                        at(*line),
                        path.join("::")
                    ));
                }
                continue;
            };
            let their_layer = layer(&theirs).unwrap_or(0);
            if own == "client" {
                if theirs != "client" && !CLIENT_MAY_USE.contains(&theirs.as_str()) {
                    out.push(format!(
                        "{}: the client uses crate::{}",
                        at(*line),
                        path.join("::")
                    ));
                }
                continue;
            }
            if their_layer > own_layer {
                out.push(format!(
                    "{} (layer {own_layer}) imports crate::{} (layer {their_layer})",
                    at(*line),
                    path.join("::")
                ));
            }
            // A transport reaches the engine through its port only (re-exports resolved:
            // `crate::Service` would be `service`, not `server`).
            if own == "transport" {
                let resolved = resolve_fully(path, &exports);
                if resolved.first().is_some_and(|f| f == "server")
                    && !resolved
                        .starts_with(&PORT.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
                {
                    out.push(format!(
                        "{}: a transport uses crate::{} (only server::front::port is the engine's port)",
                        at(*line),
                        path.join("::")
                    ));
                }
            }
        }
        let file = source.path.to_string_lossy().replace('\\', "/");
        if !ERA_MAY_BRANCH.iter().any(|p| file.starts_with(p)) {
            for line in &names.era_branches {
                out.push(format!(
                    "{}: branches on an era outside protocol/ and server/front/",
                    at(*line)
                ));
            }
        }
        if file != "protocol/version.rs" {
            for line in &names.revision_decisions {
                out.push(format!(
                    "{}: decides by revision outside protocol/version.rs (make it a column of the revision table)",
                    at(*line)
                ));
            }
            out.extend(version_string_comparisons(source));
        }
    }
    if !unknown.is_empty() {
        out.push(format!(
            "modules with no layer in LAYERS (and docs/architecture.md): {unknown:?}"
        ));
    }
    out
}

/// A path with the root's re-exports followed to where they lead.
fn resolve_fully(path: &[String], exports: &BTreeMap<Vec<String>, Vec<String>>) -> Vec<String> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let hit = (1..=path.len())
            .rev()
            .find_map(|n| exports.get(&path[..n]).map(|t| (n, t.clone())));
        let Some((n, target)) = hit else { break };
        let mut next = target;
        next.extend(path[n..].iter().cloned());
        path = next;
    }
    path
}

/// Comparisons with a version string (`== "2025-06-18"`, `"2025-06-18" =>`) outside the
/// revision table, in code (string literals inside tests are left out with the tests).
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
                source.path.display()
            )
        })
        .collect()
}

/// The protocol files that import a file of their own rank or above.
fn protocol_problems(sources: &[Source]) -> Vec<String> {
    let rank = |name: &str| {
        PROTOCOL_ORDER
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| *r)
    };
    let mut out = Vec::new();
    for source in sources {
        let module = module_path(&source.path);
        if module.first().map(String::as_str) != Some("protocol") {
            continue;
        }
        let name = source
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(own) = rank(&name) else {
            out.push(format!("protocol/{name}.rs has no rank in PROTOCOL_ORDER"));
            continue;
        };
        if name == "mod" {
            continue;
        }
        let names = names_of(source);
        for (path, line) in names.paths.iter().chain(&names.reexports) {
            if path.first().map(String::as_str) != Some("protocol") {
                continue;
            }
            if let Some(other) = path.get(1)
                && let Some(theirs) = rank(other)
                && *other != name
                && theirs >= own
            {
                out.push(format!("protocol/{name}.rs:{line} uses protocol::{other}"));
            }
        }
    }
    out
}

/// What each module file declares at its top level: the names of its items, and where each
/// of its `use` declarations points (`name` → absolute path), so that a path naming a
/// re-export is followed to the file that defines it.
struct Declared {
    items: BTreeSet<String>,
    uses: BTreeMap<String, Vec<String>>,
}

fn declared(source: &Source) -> Declared {
    let file = syn::parse_file(&source.text).expect("parses");
    let module = module_path(&source.path);
    let mut items = BTreeSet::new();
    let mut uses = BTreeMap::new();
    fn collect(
        prefix: &mut Vec<String>,
        tree: &syn::UseTree,
        out: &mut Vec<(Vec<String>, String)>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                collect(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                out.push((full, n.ident.to_string()));
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                out.push((full, r.rename.to_string()));
            }
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| collect(prefix, t, out)),
        }
    }
    for item in &file.items {
        let ident = match item {
            syn::Item::Struct(i) => Some(i.ident.to_string()),
            syn::Item::Enum(i) => Some(i.ident.to_string()),
            syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
            syn::Item::Trait(i) => Some(i.ident.to_string()),
            syn::Item::Type(i) => Some(i.ident.to_string()),
            syn::Item::Const(i) => Some(i.ident.to_string()),
            syn::Item::Static(i) => Some(i.ident.to_string()),
            syn::Item::Mod(i) if i.content.is_some() => Some(i.ident.to_string()),
            syn::Item::Macro(i) => i.ident.as_ref().map(ToString::to_string),
            syn::Item::Use(u) if !is_cfg_test(&u.attrs) => {
                let mut found = Vec::new();
                collect(&mut Vec::new(), &u.tree, &mut found);
                let resolver = Collector {
                    module: module.clone(),
                    names: &mut Names::default(),
                    reexporting: false,
                };
                for (path, name) in found {
                    let target = resolver.resolve(&path).or_else(|| {
                        // A path relative to the module (`use child::Item`).
                        let mut abs = module.clone();
                        abs.extend(path.iter().cloned());
                        Some(abs)
                    });
                    if let Some(t) = target {
                        uses.insert(name, t);
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(i) = ident {
            items.insert(i);
        }
    }
    Declared { items, uses }
}

/// The module file that defines what an absolute path names, following `use` declarations.
fn defining_file(
    path: &[String],
    modules: &BTreeMap<Vec<String>, Declared>,
) -> Option<Vec<String>> {
    let mut path = path.to_vec();
    for _ in 0..16 {
        // The longest prefix that is a module file.
        let n = (0..=path.len())
            .rev()
            .find(|n| modules.contains_key(&path[..*n]))?;
        let module = &path[..n];
        let Some(name) = path.get(n) else {
            return Some(module.to_vec());
        };
        let declared = &modules[module];
        if declared.items.contains(name) {
            return Some(module.to_vec());
        }
        match declared.uses.get(name) {
            Some(target)
                if target
                    .first()
                    .is_some_and(|f| layer(f).is_some() || f == "crate") =>
            {
                let mut next = target.clone();
                next.extend(path[n + 1..].iter().cloned());
                if next == path {
                    return Some(module.to_vec());
                }
                path = next;
            }
            // An external crate's item, or something the checker cannot follow: the module.
            _ => return Some(module.to_vec()),
        }
    }
    None
}

/// Files that import each other, directly or around a circle.
fn circles(sources: &[Source]) -> Vec<String> {
    let modules: BTreeMap<Vec<String>, Declared> = sources
        .iter()
        .map(|s| (module_path(&s.path), declared(s)))
        .collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for source in sources {
        let own = module_path(&source.path);
        for (path, _) in &names_of(source).paths {
            if let Some(to) = defining_file(path, &modules)
                && to != own
                && !to.is_empty()
            {
                edges.entry(own.clone()).or_default().insert(to);
            }
        }
    }
    // Tarjan's strongly connected components.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on: BTreeSet<Vec<String>>,
        next: usize,
        out: Vec<Vec<Vec<String>>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &Vec<String>) {
            self.index.insert(v.clone(), self.next);
            self.low.insert(v.clone(), self.next);
            self.next += 1;
            self.stack.push(v.clone());
            self.on.insert(v.clone());
            for w in self.edges.get(v).into_iter().flatten() {
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
                    self.on.remove(&w);
                    let done = &w == v;
                    component.push(w);
                    if done {
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
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in modules.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
        .into_iter()
        .map(|mut c| {
            c.sort();
            c.iter()
                .map(|m| {
                    if m.is_empty() {
                        "lib".to_owned()
                    } else {
                        m.join("/")
                    }
                })
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect()
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let found = circles(&sources());
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_source_keeps_the_rules() {
    let sources = sources();
    let mut all = problems(&sources);
    all.extend(protocol_problems(&sources));
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// Applies `mutate` to the file at `path` and returns what the checker says.
fn mutated(path: &str, mutate: impl Fn(&str) -> String) -> Vec<String> {
    let mut sources = sources();
    let s = sources
        .iter_mut()
        .find(|s| s.path == Path::new(path))
        .unwrap_or_else(|| panic!("no {path}"));
    s.text = mutate(&s.text);
    let mut all = problems(&sources);
    all.extend(protocol_problems(&sources));
    all
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
    let found = mutated("server/dispatch.rs", |t| {
        format!(
            "{t}\n#[allow(dead_code)]\nfn branch(r: crate::protocol::Revision) -> bool {{ r.era() == crate::protocol::Era::Modern }}\n"
        )
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("server/dispatch.rs") && p.contains("branches on an era")),
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
        found.iter().any(|p| p.contains("transport/http/sse.rs")),
        "{found:?}"
    );
}

#[test]
fn a_revision_compared_outside_the_table_is_caught() {
    let found = mutated("server/dispatch.rs", |t| {
        format!(
            "{t}\n#[allow(dead_code)]\nfn old(v: &str) -> bool {{ v == \"2025-06-18\" }}\n#[allow(dead_code)]\nfn named(r: crate::protocol::Revision) -> bool {{ r == crate::protocol::Revision::V2025_06_18 }}\n"
        )
    });
    let here: Vec<_> = found
        .iter()
        .filter(|p| p.contains("server/dispatch.rs"))
        .collect();
    assert_eq!(here.len(), 2, "{found:?}");
}

#[test]
fn a_circle_is_caught() {
    let mut sources = sources();
    let s = sources
        .iter_mut()
        .find(|s| s.path == Path::new("handler/state.rs"))
        .expect("handler/state.rs");
    s.text
        .push_str("\n#[allow(unused_imports)]\nuse super::context::Context;\n");
    let found = circles(&sources);
    assert!(
        found
            .iter()
            .any(|c| c == "handler/context <-> handler/state"),
        "{found:?}"
    );
}

#[test]
fn module_paths_follow_the_files() {
    assert_eq!(
        module_path(Path::new("server/front/mod.rs")),
        ["server", "front"]
    );
    assert_eq!(
        module_path(Path::new("server/front/port.rs")),
        ["server", "front", "port"]
    );
    assert!(module_path(Path::new("lib.rs")).is_empty());
}
