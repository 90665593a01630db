//! The engine's seams (docs/architecture.md, "The invoker and the catalog: the seams"),
//! checked on the parsed source: a user function is called only by the invoker,
//! `server/invoker.rs`.
//!
//! A user function is what the registry holds for a `#[tool]`, `#[prompt]`, `#[resource]`,
//! `#[view]` or completion: the fields `call`, `get`, `read`, `html` and `complete` of their
//! definitions, and the `CompleteFn` and `ViewFn` pointers taken out of them. A call of one is
//! - a call through such a field, `(def.call)(…)`;
//! - a call of a name that holds one: a parameter or `let` typed `CompleteFn` or `ViewFn`
//!   (or an `Option` of one), a binding of `ViewHtml::Function(…)`, or a binding whose value
//!   comes from such a name or field (`let Some(complete) = completer`).
//!
//! Macro bodies (`tokio::select!`, …) are scanned as tokens for the same shapes. Items under
//! `#[cfg(test)]` are left out: unit tests may call anything. The checker is tested too: each
//! way of calling a user function, written outside the invoker, must be caught.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::visit::Visit;

/// The one file that may call user functions.
const INVOKER: &str = "server/invoker.rs";

/// The registry's fields that hold user functions.
const FIELDS: &[&str] = &["call", "get", "read", "html", "complete"];

/// The types of user-function pointers.
const FN_TYPES: &[&str] = &["CompleteFn", "ViewFn"];

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

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| matches!(&m, syn::Meta::Path(p) if p.is_ident("test")))
    })
}

/// Whether tokens name a user function: a handler field after a dot (not a method call such
/// as `raw.get()`), or a held name (not a method's: `x.complete(…)`).
fn tokens_name_one(tokens: TokenStream, held: &BTreeSet<String>) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Ident(id) => {
                let s = id.to_string();
                let after_dot = matches!(i.checked_sub(1).map(|j| &trees[j]), Some(TokenTree::Punct(p)) if p.as_char() == '.');
                let called = matches!(
                    trees.get(i + 1),
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis
                );
                if (after_dot && !called && FIELDS.contains(&s.as_str()))
                    || (!after_dot && held.contains(&s))
                {
                    return true;
                }
            }
            TokenTree::Group(g) if tokens_name_one(g.stream(), held) => return true,
            _ => {}
        }
    }
    false
}

/// Whether a type mentions a user-function pointer type (`CompleteFn`, `Option<ViewFn>`, …).
fn is_fn_type(ty: &syn::Type) -> bool {
    struct Finds(bool);
    impl<'ast> Visit<'ast> for Finds {
        fn visit_path_segment(&mut self, s: &'ast syn::PathSegment) {
            if FN_TYPES.contains(&s.ident.to_string().as_str()) {
                self.0 = true;
            }
            syn::visit::visit_path_segment(self, s);
        }
    }
    let mut f = Finds(false);
    f.visit_type(ty);
    f.0
}

/// Whether an expression yields a user function (or something holding one): it names a
/// handler field or a held name.
fn yields_one(expr: &syn::Expr, held: &BTreeSet<String>) -> bool {
    struct Finds<'a> {
        held: &'a BTreeSet<String>,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finds<'_> {
        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            if let syn::Member::Named(name) = &f.member
                && FIELDS.contains(&name.to_string().as_str())
            {
                self.found = true;
            }
            syn::visit::visit_expr_field(self, f);
        }
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.path
                .get_ident()
                .is_some_and(|i| self.held.contains(&i.to_string()))
            {
                self.found = true;
            }
            syn::visit::visit_expr_path(self, p);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.found |= tokens_name_one(m.tokens.clone(), self.held);
        }
    }
    let mut f = Finds { held, found: false };
    f.visit_expr(expr);
    f.found
}

/// The identifiers a pattern binds.
fn bound(pat: &syn::Pat, out: &mut Vec<String>) {
    struct Idents<'a>(&'a mut Vec<String>);
    impl<'ast> Visit<'ast> for Idents<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    Idents(out).visit_pat(pat);
}

/// Whether a pattern is `ViewHtml::Function(…)` (or has one inside).
fn is_view_function(pat: &syn::Pat) -> bool {
    struct Finds(bool);
    impl<'ast> Visit<'ast> for Finds {
        fn visit_pat_tuple_struct(&mut self, p: &'ast syn::PatTupleStruct) {
            let names: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            if names.ends_with(&["ViewHtml".to_owned(), "Function".to_owned()]) {
                self.0 = true;
            }
            syn::visit::visit_pat_tuple_struct(self, p);
        }
    }
    let mut f = Finds(false);
    f.visit_pat(pat);
    f.0
}

/// Collects, per file, the lines where a user function is called.
struct Calls {
    /// Names that hold a user function, in the function being visited.
    held: BTreeSet<String>,
    lines: Vec<usize>,
}

impl Calls {
    fn yields_one(&self, expr: &syn::Expr) -> bool {
        yields_one(expr, &self.held)
    }

    fn hold(&mut self, pat: &syn::Pat) {
        let mut names = Vec::new();
        bound(pat, &mut names);
        self.held.extend(names);
    }

    /// Macro tokens: `( … . field ) ( … )` and `held ( … )`.
    fn scan_macro(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in trees.iter().enumerate() {
            let next_is_call = matches!(
                trees.get(i + 1),
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis
            );
            match t {
                TokenTree::Group(g) => {
                    if next_is_call && g.delimiter() == Delimiter::Parenthesis {
                        let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                        if let [.., TokenTree::Punct(p), TokenTree::Ident(f)] = inner.as_slice()
                            && p.as_char() == '.'
                            && FIELDS.contains(&f.to_string().as_str())
                        {
                            self.lines.push(f.span().start().line);
                        }
                    }
                    self.scan_macro(g.stream());
                }
                TokenTree::Ident(id) if next_is_call && self.held.contains(&id.to_string()) => {
                    self.lines.push(id.span().start().line);
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Calls {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    // What a function holds is its own.
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let outer = std::mem::take(&mut self.held);
        syn::visit::visit_item_fn(self, f);
        self.held = outer;
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        let outer = std::mem::take(&mut self.held);
        syn::visit::visit_impl_item_fn(self, f);
        self.held = outer;
    }

    fn visit_signature(&mut self, sig: &'ast syn::Signature) {
        for input in &sig.inputs {
            if let syn::FnArg::Typed(t) = input
                && is_fn_type(&t.ty)
            {
                self.hold(&t.pat);
            }
        }
        syn::visit::visit_signature(self, sig);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        let typed = matches!(&local.pat, syn::Pat::Type(t) if is_fn_type(&t.ty));
        let from_one = local
            .init
            .as_ref()
            .is_some_and(|i| self.yields_one(&i.expr));
        if typed || from_one || is_view_function(&local.pat) {
            self.hold(&local.pat);
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_let(&mut self, e: &'ast syn::ExprLet) {
        if self.yields_one(&e.expr) || is_view_function(&e.pat) {
            self.hold(&e.pat);
        }
        syn::visit::visit_expr_let(self, e);
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        let from_one = self.yields_one(&m.expr);
        for arm in &m.arms {
            if from_one || is_view_function(&arm.pat) {
                self.hold(&arm.pat);
            }
        }
        syn::visit::visit_expr_match(self, m);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        let mut callee = &*call.func;
        while let syn::Expr::Paren(p) = callee {
            callee = &p.expr;
        }
        match callee {
            syn::Expr::Field(f) => {
                if let syn::Member::Named(name) = &f.member
                    && FIELDS.contains(&name.to_string().as_str())
                {
                    self.lines.push(name.span().start().line);
                }
            }
            syn::Expr::Path(p) => {
                if let Some(id) = p.path.get_ident()
                    && self.held.contains(&id.to_string())
                {
                    self.lines.push(id.span().start().line);
                }
            }
            _ => {}
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.scan_macro(mac.tokens.clone());
    }
}

/// The lines of a file that call a user function.
fn calls_in(text: &str) -> Vec<usize> {
    let file = syn::parse_file(text).expect("the source parses");
    let mut calls = Calls {
        held: BTreeSet::new(),
        lines: Vec::new(),
    };
    calls.visit_file(&file);
    calls.lines.sort_unstable();
    calls.lines.dedup();
    calls.lines
}

/// Every call of a user function outside the invoker, as `file:line`.
fn problems(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources {
        if s.path == Path::new(INVOKER) {
            continue;
        }
        for line in calls_in(&s.text) {
            out.push(format!(
                "{}:{line} calls a user function: only {INVOKER} may",
                s.path.display()
            ));
        }
    }
    out
}

#[test]
fn only_the_invoker_calls_user_functions() {
    let problems = problems(&sources());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_invoker_is_seen_calling_each_kind_of_user_function() {
    // The checker is not blind: in the invoker it finds a tool's, a prompt's, a resource's
    // and a view's function through their fields, and a completion through its pointer.
    let sources = sources();
    let invoker = sources
        .iter()
        .find(|s| s.path == Path::new(INVOKER))
        .expect("the invoker exists");
    let text = &invoker.text;
    let calls = calls_in(text);
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("{INVOKER} has `{needle}`"))
    };
    for needle in [
        "(self.def.call)(",
        "(self.def.get)(",
        "(self.def.read)(",
        "(self.html)(",
        "complete(request)",
    ] {
        assert!(
            calls.contains(&line_of(needle)),
            "`{needle}` in {INVOKER} is not seen as a call of a user function: {calls:?}"
        );
    }
}

/// The sources with `code` added to dispatch/mod.rs.
fn with_dispatch_code(code: &str) -> Vec<Source> {
    let mut sources = sources();
    let dispatch = sources
        .iter_mut()
        .find(|s| s.path == Path::new("server/dispatch/mod.rs"))
        .expect("dispatch/mod.rs exists");
    dispatch.text.push_str(code);
    sources
}

#[test]
fn the_checker_catches_each_way_of_calling_a_user_function_elsewhere() {
    let mutations: &[(&str, &str)] = &[
        (
            "a tool through its field",
            "fn f(def: &'static crate::handler::ToolDef, ctx: crate::Context) {\n    let _ = (def.call)(None, ctx);\n}\n",
        ),
        (
            "a resource through its field, in a macro",
            "async fn f(def: &'static crate::handler::ResourceDef, r: crate::handler::ResourceRequest, ctx: crate::Context) {\n    tokio::select! { _ = (def.read)(r, ctx) => {} }\n}\n",
        ),
        (
            "a view's function out of its match",
            "fn f(h: crate::registry::ViewHtml, ctx: crate::Context) {\n    match h {\n        crate::registry::ViewHtml::Function(make) => { let _ = make(ctx); }\n        _ => {}\n    }\n}\n",
        ),
        (
            "a completion through a binding of its field",
            "fn f(def: &'static crate::handler::PromptDef, r: crate::handler::CompletionRequest) {\n    let completer = def.complete;\n    let Some(complete) = completer else { return };\n    let _ = complete(r);\n}\n",
        ),
        (
            "a completion taken as a parameter",
            "fn f(c: crate::handler::CompleteFn, r: crate::handler::CompletionRequest) {\n    let _ = c(r);\n}\n",
        ),
    ];
    for (what, code) in mutations {
        let problems = problems(&with_dispatch_code(code));
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("server/dispatch/mod.rs:")),
            "a call of {what} outside the invoker was not caught"
        );
    }
    // Under `#[cfg(test)]` it is allowed.
    let allowed = with_dispatch_code(
        "#[cfg(test)]\nmod more {\n    fn f(def: &'static crate::handler::ToolDef, ctx: crate::Context) {\n        let _ = (def.call)(None, ctx);\n    }\n}\n",
    );
    assert!(problems(&allowed).is_empty());
}
