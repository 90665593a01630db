//! Validation: every rule about what an attribute says and what the function looks like.
//!
//! It always runs, after parsing, whatever parsing found, and records every problem in the
//! `Ctxt`: no check depends on another one passing, except where the second would only
//! repeat the first (the template's variables are compared with the parameters only when
//! the template parses). The rules shared with the runtime come from `sake_rules`.

use std::collections::HashSet;

use quote::ToTokens;
use syn::{FnArg, Type};

use crate::ast::{self, Func, Param, ParamKind};
use crate::attr::{ItemAttrs, Kind, TASK_HELP, TASK_SUPPORT};
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, kind: Kind, attrs: &ItemAttrs, func: &Func) {
    attributes(cx, kind, attrs, func);
    description(cx, kind, func);
    signature(cx, kind, func);
    parameters(cx, kind, func);
    if kind == Kind::Resource {
        resource(cx, attrs, func);
    }
}

/// What the item attribute says, option by option.
fn attributes(cx: &Ctxt, kind: Kind, attrs: &ItemAttrs, func: &Func) {
    if kind == Kind::Tool {
        tool_name(cx, attrs, func);
    }
    for icon in &attrs.icons {
        if let Some(theme) = &icon.theme
            && !matches!(theme.value().as_str(), "light" | "dark")
        {
            cx.error_spanned_by(theme, "an icon's theme is \"light\" or \"dark\"");
        }
    }
    let mut required = HashSet::new();
    for capability in &attrs.requires {
        if !required.insert(capability.name) {
            cx.error_spanned_by(
                &capability.key,
                format!("`{}` is required twice: list it once", capability.key),
            );
        }
    }
    if let Some(scopes) = &attrs.scopes {
        if scopes.list.is_empty() {
            cx.error_spanned_by(
                &scopes.tokens,
                "`scopes()` lists no scope: name the OAuth scopes a caller needs, such as `scopes(\"files:read\")`, or leave the option out",
            );
        }
        let mut seen = HashSet::new();
        for scope in &scopes.list {
            let value = scope.value();
            if let Err(problem) = sake_rules::scope::check(&value) {
                cx.error_spanned_by(
                    scope,
                    format!(
                        "invalid OAuth scope {value:?}: {problem}; {}",
                        sake_rules::scope::RULE
                    ),
                );
            } else if !seen.insert(value.clone()) {
                cx.error_spanned_by(
                    scope,
                    format!("scope {value:?} is listed twice: list each scope once"),
                );
            }
        }
    }
    if let Some(task) = &attrs.task
        && !TASK_SUPPORT.iter().any(|(v, _)| *v == task.value())
    {
        cx.error_spanned_by(
            task,
            format!("invalid task support {:?}: {TASK_HELP}", task.value()),
        );
    }
}

/// The tool's name: `name = "..."` or the function's.
fn tool_name(cx: &Ctxt, attrs: &ItemAttrs, func: &Func) {
    let (name, span, fix) = match &attrs.name {
        Some(n) => (n.value(), n.span(), ""),
        None => (
            func.ident().to_string(),
            func.ident().span(),
            "; give the tool another name with #[tool(name = \"...\")]",
        ),
    };
    if let Err(problem) = sake_rules::tool_name::check(&name) {
        cx.error_at(
            span,
            format!(
                "invalid tool name {name:?}: {problem}; {}{fix}",
                sake_rules::tool_name::RULE
            ),
        );
    }
}

fn description(cx: &Ctxt, kind: Kind, func: &Func) {
    let what = match kind {
        Kind::Tool => "tools",
        Kind::Prompt => "prompts",
        Kind::Resource => return,
    };
    if func.description.is_none() {
        cx.error_at(
            func.ident().span(),
            format!(
                "a {} needs a description: write a `///` doc comment above the function (clients and the official conformance suite reject {what} without one)",
                kind.attr()
            ),
        );
    }
}

/// The function's qualifiers, generics, receiver, parameter patterns and return type.
fn signature(cx: &Ctxt, kind: Kind, func: &Func) {
    let sig = &func.item.sig;
    let what = kind.attr();
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, format!("a {what} function cannot be `const`"));
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        cx.error_spanned_by(
            u,
            format!("a {what} function cannot be `unsafe`: clients call it with arbitrary input"),
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(
            abi,
            format!("a {what} function cannot have an `extern` ABI"),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &sig.generics,
            format!("a {what} function cannot be generic: the server needs one concrete signature to build its schema; write a non-generic wrapper that calls your generic function"),
        );
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v, format!("a {what} function cannot be variadic"));
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => cx.error_spanned_by(
                r,
                format!("a {what} function cannot take `self`: annotate a free function (it may call your method)"),
            ),
            FnArg::Typed(pt) if ast::plain_name(&pt.pat).is_none() => cx.error_spanned_by(
                &pt.pat,
                format!("a {what} parameter must be a plain name, not a pattern: the name is the argument's name in the schema; name the parameter and destructure it in the function body"),
            ),
            FnArg::Typed(_) => {}
        }
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output
        && ast::contains_impl_trait(ty)
    {
        cx.error_spanned_by(
            ty,
            format!("a {what} function must name its return type, not `impl Trait`"),
        );
    }
}

/// Each parameter the macro turned into an argument, the context or a state.
fn parameters(cx: &Ctxt, kind: Kind, func: &Func) {
    let what = kind.attr();
    let mut context_seen = false;
    let mut principal_seen = false;
    let mut headers: Vec<&syn::LitStr> = Vec::new();
    for p in &func.params {
        match p.kind {
            ParamKind::Context => {
                if context_seen {
                    cx.error_spanned_by(
                        &p.ty,
                        format!("a {what} function takes at most one `Context`"),
                    );
                }
                context_seen = true;
                if !p.docs.is_empty() || !p.forwarded.is_empty() {
                    cx.error_spanned_by(&p.ident, "the `Context` parameter is not an argument: it takes no doc comment, #[serde] or #[schemars]");
                }
            }
            ParamKind::State => {
                if !p.docs.is_empty() || !p.forwarded.is_empty() {
                    cx.error_spanned_by(&p.ident, "a `State<T>` parameter is not an argument: it takes no doc comment, #[serde] or #[schemars]");
                }
            }
            ParamKind::Principal { .. } => {
                if principal_seen {
                    cx.error_spanned_by(
                        &p.ty,
                        "only one parameter may take the caller's `Principal`",
                    );
                }
                principal_seen = true;
                if !p.docs.is_empty() || !p.forwarded.is_empty() {
                    cx.error_spanned_by(&p.ident, "the `Principal` parameter is not an argument: it takes no doc comment, #[serde] or #[schemars]; mark a type of your own named `Principal` with #[arg] to make it one");
                }
            }
            ParamKind::Argument => {
                argument_type(cx, what, p);
                if let Some(h) = &p.header {
                    header(cx, kind, h, &headers);
                    headers.push(h);
                }
            }
        }
    }
}

/// An argument is deserialized from each request: an owned, concrete type.
fn argument_type(cx: &Ctxt, what: &str, p: &Param) {
    match &p.ty {
        Type::Reference(r) => {
            let instead = match &*r.elem {
                Type::Path(path) if path.path.is_ident("str") => "write `String` instead of `&str`",
                Type::Slice(_) => "write `Vec<T>` instead of `&[T]`",
                _ => "write the type without `&`",
            };
            cx.error_spanned_by(
                r,
                format!("a {what} argument must be an owned type, not a reference: it is deserialized from each request; {instead}"),
            );
        }
        t if ast::contains_impl_trait(t) => cx.error_spanned_by(
            t,
            format!("a {what} argument must have a concrete type, not `impl Trait`"),
        ),
        _ => {}
    }
}

/// `#[arg(header = "Name")]`: a tool's, an RFC 9110 token, unique regardless of case.
fn header(cx: &Ctxt, kind: Kind, h: &syn::LitStr, earlier: &[&syn::LitStr]) {
    use sake_rules::header;
    let name = h.value();
    if let Err(invalid) = header::check_param_name(&name) {
        cx.error_spanned_by(
            h,
            format!(
                "{invalid}: use letters, digits and {} (it becomes `{}{name}`)",
                header::TOKEN_SPECIALS,
                header::PARAM_PREFIX
            ),
        );
    }
    if earlier.iter().any(|e| header::same_name(&e.value(), &name)) {
        cx.error_spanned_by(
            h,
            format!(
                "two parameters use this header {}: give each its own name",
                header::CASE_NOTE
            ),
        );
    }
    if kind != Kind::Tool {
        cx.error_spanned_by(
            h,
            "`#[arg(header = ...)]` is for #[tool] parameters: remove it",
        );
    }
}

/// A resource's URI, and its template's variables against the parameters.
fn resource(cx: &Ctxt, attrs: &ItemAttrs, func: &Func) {
    let Some(uri) = &attrs.uri else {
        let message = "#[resource] needs `uri = \"scheme://…\"` (a URI, or a template such as \"users://{id}/profile\")";
        if attrs.tokens.is_empty() {
            cx.error_at(proc_macro2::Span::call_site(), message);
        } else {
            cx.error_spanned_by(&attrs.tokens, message);
        }
        return;
    };
    let value = uri.value();
    let parts = match sake_rules::uri_template::parse(&value) {
        Ok(parts) => parts,
        Err(reason) => {
            cx.error_spanned_by(uri, format!("invalid URI template: {reason}"));
            return;
        }
    };
    let vars: Vec<&str> = sake_rules::uri_template::variables(&parts).collect();
    let args: Vec<&Param> = func.arguments().collect();
    for v in &vars {
        if !args.iter().any(|p| p.ident == v) {
            cx.error_spanned_by(
                uri,
                format!("template variable `{{{v}}}` has no parameter: add `{v}: T` to the function, where T: FromStr (String, u64, …)"),
            );
        }
    }
    for p in args {
        let id = &p.ident;
        if !vars.iter().any(|v| id == v) {
            cx.error_spanned_by(
                id,
                format!("parameter `{id}` is not a variable of the URI template {value:?}: a #[resource] function takes the template's variables and an optional Context"),
            );
        } else if let Some(a) = p.docs.first().or(p.forwarded.first()) {
            cx.error_spanned_by(
                a.to_token_stream(),
                "a URI variable takes no doc comment, #[serde] or #[schemars]",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    use super::*;
    use crate::attr;

    /// Every message parsing and validation record for `#[kind(args)] item`, in order.
    fn errors(kind: Kind, args: TokenStream, item: TokenStream) -> Vec<String> {
        let cx = Ctxt::default();
        let attrs = attr::parse_item_attrs(&cx, kind, args);
        let func = Func::from_syn(&cx, syn::parse2(item).unwrap());
        check(&cx, kind, &attrs, &func);
        cx.messages()
    }

    fn add() -> TokenStream {
        quote! {
            /// Adds.
            fn add(a: i64, b: i64) -> i64 { a + b }
        }
    }

    #[test]
    fn a_valid_tool_has_no_error() {
        let none: Vec<String> = Vec::new();
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(
                    name = "math.add",
                    title = "Add",
                    annotations(read_only, open_world = false, title = "A"),
                    icon(src = "https://x/a.png", sizes = ["48x48"], theme = "dark"),
                    icons = ["https://x/b.png"],
                    requires(sampling, url_elicitation),
                    scopes("files:read", "files:write"),
                    task = "optional",
                ),
                add()
            ),
            none
        );
    }

    #[test]
    fn every_bad_option_is_reported_and_parsing_goes_on() {
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(
                    nmae = "add",
                    name = "has space",
                    title = 5,
                    task = "sometimes",
                    bogus(1, 2),
                    scopes("a b", "x", "x"),
                    annotations(readonly, destructive = 1)
                ),
                add()
            ),
            [
                "unknown #[tool] option `nmae`; expected one of: name, title, annotations, icons, icon, requires, input_schema, scopes, task",
                "`title` takes a string literal: write `title = \"...\"`",
                "unknown #[tool] option `bogus`; expected one of: name, title, annotations, icons, icon, requires, input_schema, scopes, task",
                "unknown annotation `readonly`; expected one of: title, read_only, destructive, idempotent, open_world",
                "`destructive` is a flag: write `destructive` or `destructive = false`",
                "invalid tool name \"has space\": ' ' is not allowed; a tool name is 1 to 64 characters of A-Z, a-z, 0-9, `_`, `.` and `-`",
                "invalid OAuth scope \"a b\": ' ' is not allowed; a scope is one or more printable ASCII characters other than space, `\"` and `\\` (RFC 6749 §3.3)",
                "scope \"x\" is listed twice: list each scope once",
                "invalid task support \"sometimes\": write `task = \"forbidden\"` (the default: never runs as a task), `task = \"optional\"` or `task = \"required\"`",
            ]
        );
    }

    #[test]
    fn malformed_lists_do_not_stop_the_parse() {
        assert_eq!(
            errors(
                Kind::Tool,
                quote!("add", , name = "a" title = "b", icon(mime_type = "image/png"), scopes = ["x"], scopes(), requires(sampling = true, roots, roots)),
                add()
            ),
            [
                "expected the name of an option, such as `name`",
                "expected an option before this `,`",
                "expected `,`: separate options with commas",
                "an icon needs `src = \"https://…\"`",
                "write `scopes(\"files:read\", \"files:write\")`",
                "`sampling` takes no value in requires(...): write the bare word",
                "`roots` is required twice: list it once",
                "`scopes()` lists no scope: name the OAuth scopes a caller needs, such as `scopes(\"files:read\")`, or leave the option out",
            ]
        );
    }

    #[test]
    fn options_of_another_macro_name_their_owner() {
        assert_eq!(
            errors(
                Kind::Prompt,
                quote!(task = "optional", uri = "a://b", complete = f),
                add()
            ),
            [
                "`task` is an option of #[tool], not of #[prompt]; #[prompt] takes: name, title, icons, icon, complete, scopes",
                "`uri` is an option of #[resource], not of #[prompt]; #[prompt] takes: name, title, icons, icon, complete, scopes",
            ]
        );
    }

    #[test]
    fn attribute_and_function_errors_come_together() {
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(nmae = "x"),
                quote! {
                    fn bad<T>(&self, (a, b): (i64, i64), s: &str, c: Context, d: Context,
                        #[arg(header = "Bad Name")] h: String,
                        #[arg(header = "bad name", wat)] i: String) -> impl Sized {}
                }
            ),
            [
                "unknown #[tool] option `nmae`; expected one of: name, title, annotations, icons, icon, requires, input_schema, scopes, task",
                "unknown #[arg] option `wat`; expected `header = \"Name\"`",
                "a #[tool] needs a description: write a `///` doc comment above the function (clients and the official conformance suite reject tools without one)",
                "a #[tool] function cannot be generic: the server needs one concrete signature to build its schema; write a non-generic wrapper that calls your generic function",
                "a #[tool] function cannot take `self`: annotate a free function (it may call your method)",
                "a #[tool] parameter must be a plain name, not a pattern: the name is the argument's name in the schema; name the parameter and destructure it in the function body",
                "a #[tool] function must name its return type, not `impl Trait`",
                "a #[tool] argument must be an owned type, not a reference: it is deserialized from each request; write `String` instead of `&str`",
                "a #[tool] function takes at most one `Context`",
                "\"Bad Name\" is not a valid header name: use letters, digits and !#$%&'*+-.^_`|~ (it becomes `Mcp-Param-Bad Name`)",
                "\"bad name\" is not a valid header name: use letters, digits and !#$%&'*+-.^_`|~ (it becomes `Mcp-Param-bad name`)",
                "two parameters use this header (header names are case-insensitive): give each its own name",
            ]
        );
    }

    #[test]
    fn resource_errors_come_together() {
        assert_eq!(
            errors(
                Kind::Resource,
                quote!(uri = "users://{id}/posts/{slug}", scopes("")),
                quote! {
                    fn post(id: u64, #[arg(header = "X")] verbose: bool) -> String { String::new() }
                }
            ),
            [
                "invalid OAuth scope \"\": it is empty; a scope is one or more printable ASCII characters other than space, `\"` and `\\` (RFC 6749 §3.3)",
                "`#[arg(header = ...)]` is for #[tool] parameters: remove it",
                "template variable `{slug}` has no parameter: add `slug: T` to the function, where T: FromStr (String, u64, …)",
                "parameter `verbose` is not a variable of the URI template \"users://{id}/posts/{slug}\": a #[resource] function takes the template's variables and an optional Context",
            ]
        );
        assert_eq!(
            errors(
                Kind::Resource,
                quote!(mime_type = "text/plain", uri = "files://{+path}", uri = "x"),
                quote!(
                    fn file(path: String) -> String {
                        path
                    }
                )
            ),
            [
                "duplicate option `uri`: give it once",
                "invalid URI template: `{+path}` is not a level-1 variable (letters, digits and `_` only; no operators such as + # / ? &)",
            ]
        );
        assert_eq!(
            errors(
                Kind::Resource,
                quote!(),
                quote!(
                    fn about() -> String {
                        String::new()
                    }
                )
            ),
            [
                "#[resource] needs `uri = \"scheme://…\"` (a URI, or a template such as \"users://{id}/profile\")"
            ]
        );
    }

    #[test]
    fn a_name_from_the_function_says_how_to_rename() {
        let long = syn::Ident::new(&"x".repeat(65), proc_macro2::Span::call_site());
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(),
                quote!(/// Long.
                fn #long() {})
            ),
            [format!(
                "invalid tool name \"{}\": it is 65 characters long; a tool name is 1 to 64 characters of A-Z, a-z, 0-9, `_`, `.` and `-`; give the tool another name with #[tool(name = \"...\")]",
                "x".repeat(65)
            )]
        );
        // Prompts and resources have no name rule.
        assert!(errors(Kind::Prompt, quote!(name = "has space"), add()).is_empty());
    }

    #[test]
    fn errors_come_in_source_order() {
        let mut item: syn::ItemFn = syn::parse_str(
            r#"
            #[tool(name = "has space", nmae = "x", task = "no")]
            fn f(
                #[arg(header = "a b", wat)] h: String,
            ) {}
            "#,
        )
        .unwrap();
        let attr = item.attrs.remove(0);
        let syn::Meta::List(list) = attr.meta else {
            unreachable!("the attribute has a list")
        };
        let messages: Vec<String> = errors(Kind::Tool, list.tokens, item.to_token_stream())
            .iter()
            .map(|m| m.split([':', ';']).next().unwrap_or_default().to_owned())
            .collect();
        // Recorded while parsing first (`nmae`, `wat`), then while validating.
        assert_eq!(
            messages,
            [
                "invalid tool name \"has space\"",
                "unknown #[tool] option `nmae`",
                "invalid task support \"no\"",
                "a #[tool] needs a description",
                "\"a b\" is not a valid header name",
                "unknown #[arg] option `wat`",
            ]
        );
    }
}
