//! Validation: every rule about what an attribute says and what the function looks like.
//!
//! It always runs, after parsing, whatever parsing found, and records every problem in the
//! `Ctxt`: no check depends on another one passing, except where the second would only
//! repeat the first (the template's variables are compared with the parameters only when
//! the template parses). The rules shared with the runtime come from `sake_rules`.

use std::collections::HashSet;

use quote::ToTokens;
use syn::{FnArg, Type};

use crate::ast::{self, Func, Item, Param, ParamKind};
use crate::attr::{ItemAttrs, Kind, TASK_HELP, TASK_SUPPORT, UiLink, Words};
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, attrs: &ItemAttrs, item: &Item) {
    match item {
        Item::Tool(func) => function(cx, Kind::Tool, attrs, func),
        Item::Prompt(func) => function(cx, Kind::Prompt, attrs, func),
        Item::Resource(func) => function(cx, Kind::Resource, attrs, func),
        Item::View(view) => self::view(cx, attrs, &view.item),
    }
}

/// The rules of `#[tool]`, `#[prompt]` and `#[resource]`.
fn function(cx: &Ctxt, kind: Kind, attrs: &ItemAttrs, func: &Func) {
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
    if let Some(UiLink::Uri(uri)) = &attrs.ui {
        ui_uri(cx, uri);
    }
    if let Some(visibility) = &attrs.visibility {
        words(
            cx,
            visibility,
            "`visibility()` names no one: write `visibility(app)` for a tool only views call, `visibility(model)` for one views may not call, or leave the option out (`model` and `app`)",
        );
    }
}

/// A view's URI: `ui://…`.
fn ui_uri(cx: &Ctxt, uri: &syn::LitStr) {
    if let Err(e) = sake_rules::apps::check_ui_uri(&uri.value()) {
        cx.error_spanned_by(
            uri,
            format!(
                "invalid view URI {:?}: {e}; {}",
                uri.value(),
                sake_rules::apps::UI_URI_RULE
            ),
        );
    }
}

/// A list of words: not empty, each word once.
fn words(cx: &Ctxt, words: &Words, empty: &str) {
    if words.list.is_empty() {
        cx.error_spanned_by(&words.tokens, empty);
    }
    for (i, w) in words.list.iter().enumerate() {
        if words.list[..i].iter().any(|e| e.wire == w.wire) {
            cx.error_spanned_by(&w.key, format!("`{}` is listed twice: list it once", w.key));
        }
    }
}

/// `#[view]`: its options (a `ui://` URI and HTML are required; origins, permissions and
/// the domain follow `sake_rules::apps`), and the item: a unit struct without generics.
fn view(cx: &Ctxt, attrs: &ItemAttrs, item: &syn::ItemStruct) {
    let whole = |message: &str| {
        if attrs.tokens.is_empty() {
            cx.error_at(proc_macro2::Span::call_site(), message);
        } else {
            cx.error_spanned_by(&attrs.tokens, message);
        }
    };
    match &attrs.uri {
        Some(uri) => ui_uri(cx, uri),
        // Given with a bad value: reported for the value.
        None if attrs.gave("uri") => {}
        None => whole(
            "#[view] needs `uri = \"ui://…\"`, the view's URI (such as \"ui://weather/card\")",
        ),
    }
    if attrs.html.is_none() && !attrs.gave("html") {
        whole(
            "#[view] needs its HTML: `html = \"view.html\"` (a file next to this source file, embedded at compile time) or `html = path::to::function`",
        );
    }
    if let Some(csp) = &attrs.csp {
        let lists = [
            &csp.connect_domains,
            &csp.resource_domains,
            &csp.frame_domains,
            &csp.base_uri_domains,
        ];
        if lists.iter().all(|l| l.is_none()) {
            cx.error_spanned_by(
                &csp.tokens,
                "`csp()` names no origin: list them, such as `csp(connect_domains = [\"https://api.example.com\"])`, or leave the option out (the view then reaches nothing outside itself)",
            );
        }
        for list in lists.into_iter().flatten() {
            for (i, origin) in list.iter().enumerate() {
                let value = origin.value();
                if let Err(e) = sake_rules::apps::check_origin(&value) {
                    cx.error_spanned_by(
                        origin,
                        format!(
                            "{value:?} is not an origin: {e}; {}",
                            sake_rules::apps::ORIGIN_RULE
                        ),
                    );
                } else if list[..i].iter().any(|o| o.value() == value) {
                    cx.error_spanned_by(
                        origin,
                        format!("{value:?} is listed twice: list each origin once"),
                    );
                }
            }
        }
    }
    if let Some(permissions) = &attrs.permissions {
        words(
            cx,
            permissions,
            "`permissions()` asks for nothing: name what the view needs (camera, microphone, geolocation, clipboard_write), or leave the option out",
        );
    }
    if let Some(domain) = &attrs.domain
        && let Err(e) = sake_rules::apps::check_domain(&domain.value())
    {
        cx.error_spanned_by(domain, format!("invalid domain {:?}: {e}", domain.value()));
    }
    let ident = &item.ident;
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &item.generics,
            "a #[view] struct cannot be generic: it names one view",
        );
    }
    if !matches!(item.fields, syn::Fields::Unit) {
        cx.error_spanned_by(
            &item.fields,
            format!(
                "a #[view] struct is a unit struct that names the view: write `struct {ident};`"
            ),
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
        Kind::Resource | Kind::View => return,
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
        function(&cx, kind, &attrs, &func);
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
                "unknown #[tool] option `nmae`; expected one of: name, title, annotations, icons, icon, requires, input_schema, scopes, task, ui, visibility, layer",
                "`title` takes a string literal: write `title = \"...\"`",
                "unknown #[tool] option `bogus`; expected one of: name, title, annotations, icons, icon, requires, input_schema, scopes, task, ui, visibility, layer",
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
                "`uri` is an option of #[resource] and #[view], not of #[prompt]; #[prompt] takes: name, title, icons, icon, complete, scopes",
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
                "unknown #[tool] option `nmae`; expected one of: name, title, annotations, icons, icon, requires, input_schema, scopes, task, ui, visibility, layer",
                "unknown #[arg] option `wat`; expected `header = \"Name\"` or `sensitive`",
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

    /// Every message parsing and validation record for `#[view(args)] item`, in order.
    fn view_errors(args: TokenStream, item: TokenStream) -> Vec<String> {
        let cx = Ctxt::default();
        let attrs = attr::parse_item_attrs(&cx, Kind::View, args);
        view(&cx, &attrs, &syn::parse2(item).unwrap());
        cx.messages()
    }

    #[test]
    fn a_valid_view_has_no_error() {
        let none: Vec<String> = Vec::new();
        assert_eq!(
            view_errors(
                quote!(
                    uri = "ui://weather/card",
                    html = "card.html",
                    name = "card",
                    title = "Card",
                    csp(
                        connect_domains = ["https://api.example.com"],
                        resource_domains = ["https://*.cdn.example"],
                        frame_domains = ["https://www.youtube.com"],
                        base_uri_domains = ["https://cdn.example"]
                    ),
                    permissions(camera, microphone, geolocation, clipboard_write),
                    domain = "a904794854a047f6.claudemcpcontent.com",
                    prefers_border,
                ),
                quote!(
                    struct Card;
                )
            ),
            none
        );
        assert_eq!(
            view_errors(
                quote!(uri = "ui://x", html = render, prefers_border = false),
                quote!(
                    pub struct X;
                )
            ),
            none
        );
    }

    #[test]
    fn every_view_mistake_is_reported() {
        assert_eq!(
            view_errors(
                quote!(
                    uri = "https://weather/card",
                    html = 5,
                    csp(
                        connect_domains = [
                            "https://a.example; script-src *",
                            "*",
                            "https://b.example",
                            "https://b.example"
                        ],
                        fonts = []
                    ),
                    permissions(camera, camera, speaker),
                    domain = "a b",
                    prefers_border = "yes",
                    task = "optional",
                ),
                quote!(
                    struct Card<T>(T);
                )
            ),
            [
                "`html` takes a file name or a function: write `html = \"view.html\"` (a file next to this source file, embedded at compile time) or `html = path::to::function` (called on each read)",
                "unknown csp list `fonts`; expected one of: connect_domains, resource_domains, frame_domains, base_uri_domains",
                "unknown permissions `speaker`; expected one of: camera, microphone, geolocation, clipboard_write",
                "`prefers_border` is a flag: write `prefers_border` or `prefers_border = false`",
                "`task` is an option of #[tool], not of #[view]; #[view] takes: uri, html, name, title, csp, permissions, domain, prefers_border",
                "invalid view URI \"https://weather/card\": it does not start with `ui://`; a view's URI is `ui://` followed by a path of URI characters, such as \"ui://weather/card\"",
                "\"https://a.example; script-src *\" is not an origin: ';' cannot be in an origin; an origin is a scheme (http, https, ws or wss), `://`, a host whose leftmost label may be `*` (\"https://*.example.com\"), and an optional port, with no path",
                "\"*\" is not an origin: it does not start with http://, https://, ws:// or wss://; an origin is a scheme (http, https, ws or wss), `://`, a host whose leftmost label may be `*` (\"https://*.example.com\"), and an optional port, with no path",
                "\"https://b.example\" is listed twice: list each origin once",
                "`camera` is listed twice: list it once",
                "invalid domain \"a b\": ' ' is not allowed",
                "a #[view] struct cannot be generic: it names one view",
                "a #[view] struct is a unit struct that names the view: write `struct Card;`",
            ]
        );
        assert_eq!(
            view_errors(
                quote!(),
                quote!(
                    struct Card;
                )
            ),
            [
                "#[view] needs `uri = \"ui://…\"`, the view's URI (such as \"ui://weather/card\")",
                "#[view] needs its HTML: `html = \"view.html\"` (a file next to this source file, embedded at compile time) or `html = path::to::function`",
            ]
        );
        assert_eq!(
            view_errors(
                quote!(uri = "ui://{id}", html = "a.html", csp(), permissions()),
                quote!(
                    struct Card;
                )
            ),
            [
                "invalid view URI \"ui://{id}\": a view is one static resource, not a URI template; a view's URI is `ui://` followed by a path of URI characters, such as \"ui://weather/card\"",
                "`csp()` names no origin: list them, such as `csp(connect_domains = [\"https://api.example.com\"])`, or leave the option out (the view then reaches nothing outside itself)",
                "`permissions()` asks for nothing: name what the view needs (camera, microphone, geolocation, clipboard_write), or leave the option out",
            ]
        );
    }

    #[test]
    fn a_tools_link_to_its_view_is_checked() {
        let none: Vec<String> = Vec::new();
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(ui = "ui://weather/card", visibility(model, app)),
                add()
            ),
            none
        );
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(ui = weather::Card, visibility(app)),
                add()
            ),
            none
        );
        assert_eq!(
            errors(
                Kind::Tool,
                quote!(ui = "weather/card", visibility(app, robot, app)),
                add()
            ),
            [
                "unknown visibility `robot`; expected one of: model, app",
                "invalid view URI \"weather/card\": it does not start with `ui://`; a view's URI is `ui://` followed by a path of URI characters, such as \"ui://weather/card\"",
                "`app` is listed twice: list it once",
            ]
        );
        assert_eq!(
            errors(Kind::Tool, quote!(ui = 1 + 2, visibility()), add()),
            [
                "`ui` takes a view: write `ui = MyView` (a struct declared with #[view]) or `ui = \"ui://…\"`",
                "`visibility()` names no one: write `visibility(app)` for a tool only views call, `visibility(model)` for one views may not call, or leave the option out (`model` and `app`)",
            ]
        );
    }
}
