//! Code generation: the argument struct, the glue functions and the registry entry.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::LitStr;
use syn::spanned::Spanned;

use crate::ast::{Func, ParamKind};
use crate::attr::{self, Icon, ItemAttrs};
use crate::ctxt::Ctxt;

fn opt_str(v: &Option<LitStr>) -> TokenStream {
    match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

fn opt_string(v: &Option<String>) -> TokenStream {
    match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

fn icons(icons: &[Icon]) -> TokenStream {
    let items = icons.iter().map(|i| {
        let src = &i.src;
        let mime = opt_str(&i.mime_type);
        let theme = opt_str(&i.theme);
        let sizes = &i.sizes;
        quote!(::sake::__private::IconDef { src: #src, mime_type: #mime, sizes: &[#(#sizes),*], theme: #theme })
    });
    quote!(&[#(#items),*])
}

fn location() -> TokenStream {
    quote!(::sake::__private::Location {
        file: ::core::file!(),
        line: ::core::line!(),
        module: ::core::module_path!(),
    })
}

/// `^[A-Za-z0-9_.-]{1,64}$`
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The name: `name = "..."` or the function's.
fn item_name(attrs: &ItemAttrs, func: &Func) -> (String, Span) {
    match &attrs.name {
        Some(n) => (n.value(), n.span()),
        None => (func.ident().to_string(), func.ident().span()),
    }
}

/// The argument struct and the checks that report a bad parameter type at the parameter.
fn args_struct(
    func: &Func,
    derive_schema: bool,
    check: TokenStream,
) -> (TokenStream, Vec<syn::Ident>) {
    let mut fields = Vec::new();
    let mut checks = Vec::new();
    let mut idents = Vec::new();
    for p in func.arguments() {
        let (docs, fwd, id, ty) = (&p.docs, &p.forwarded, &p.ident, &p.ty);
        let header = p.header.as_ref().map(|h| {
            checks.push(
                quote_spanned!(ty.span()=> ::sake::__private::assert_header_argument::<#ty>();),
            );
            quote!(#[schemars(extend("x-mcp-header" = #h))])
        });
        fields.push(quote!(#(#docs)* #(#fwd)* #header #id: #ty));
        checks.push(quote_spanned!(ty.span()=> #check::<#ty>();));
        idents.push(id.clone());
    }
    let schema_derive = if derive_schema {
        quote!(#[derive(::sake::__private::schemars::JsonSchema)]
               #[schemars(crate = "::sake::__private::schemars")])
    } else {
        quote!()
    };
    let tokens = quote! {
        #[derive(::sake::__private::serde::Deserialize)]
        #[serde(crate = "::sake::__private::serde")]
        #schema_derive
        struct __SakeArgs { #(#fields,)* }

        fn __sake_argument_checks() { #(#checks)* }
    };
    (tokens, idents)
}

/// The `State<T>` parameters: taken from the context before the call (a missing state is a
/// start-up error, so the fallback is never reached), and the list the registry checks.
fn states(func: &Func, on_missing: TokenStream) -> (TokenStream, TokenStream) {
    let mut takes = Vec::new();
    let mut needs = Vec::new();
    for p in &func.params {
        if let ParamKind::State = p.kind {
            let (id, ty) = (&p.ident, &p.ty);
            // `StateParam` is implemented by `sake::State<T>` only: another type named `State`
            // stops here with an error that says so, at the parameter's type.
            let param = quote_spanned!(ty.span()=> <#ty as ::sake::__private::StateParam>);
            takes.push(quote_spanned! {ty.span()=>
                let #id: #ty = match #param::from_context(&__sake_ctx) {
                    ::core::option::Option::Some(s) => s,
                    ::core::option::Option::None => return #on_missing(
                        ::sake::__private::missing_state(#param::need().type_name)
                    ),
                };
            });
            needs.push(quote_spanned!(ty.span()=> #param::need()));
        }
    }
    (
        quote!(#(#takes)*),
        quote! {
            fn __sake_states() -> ::std::vec::Vec<::sake::__private::StateNeed> {
                ::std::vec![#(#needs),*]
            }
        },
    )
}

/// The call of the user's function with its arguments and context.
fn call(func: &Func) -> TokenStream {
    let ident = func.ident();
    let args = func.params.iter().map(|p| match p.kind {
        ParamKind::Argument | ParamKind::State => {
            let id = &p.ident;
            quote!(#id)
        }
        ParamKind::Context => {
            let ty = &p.ty;
            quote_spanned!(ty.span()=> ::core::convert::identity::<#ty>(__sake_ctx))
        }
    });
    let has_ctx = func
        .params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Context));
    let drop_ctx = if has_ctx {
        quote!()
    } else {
        quote!(let _ = __sake_ctx;)
    };
    let await_ = if func.is_async() {
        quote!(.await)
    } else {
        quote!()
    };
    quote!({ #drop_ctx #ident(#(#args),*) #await_ })
}

pub(crate) fn tool(cx: &Ctxt, attrs: &ItemAttrs, func: &Func) -> TokenStream {
    let (name, name_span) = item_name(attrs, func);
    if !valid_tool_name(&name) {
        cx.error_at(
            name_span,
            format!("tool name {name:?} is invalid: a tool name is 1 to 64 characters of A-Z, a-z, 0-9, `_`, `.` and `-`"),
        );
    }
    let Some(description) = &func.description else {
        cx.error_at(
            func.ident().span(),
            "a #[tool] needs a description: write a `///` doc comment above the function (clients and the official conformance suite reject tools without one)",
        );
        return quote!();
    };
    let (args, idents) = args_struct(func, true, quote!(::sake::__private::assert_tool_argument));
    let (take_states, states_fn) = states(func, quote!(::sake::__private::ready_tool_internal));
    let ret = &func.ret;
    let probe =
        quote_spanned!(ret.span()=> (&&&::sake::__private::Probe::<#ret>::NEW).sake_output_kind());
    let call = call(func);
    let title = opt_str(&attrs.title);
    let h = &attrs.hints;
    let b = |v: &Option<syn::LitBool>| match v {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let (h_title, ro, de, id, ow) = (
        opt_str(&h.title),
        b(&h.read_only),
        b(&h.destructive),
        b(&h.idempotent),
        b(&h.open_world),
    );
    let icons = icons(&attrs.icons);
    let requires = attrs.requires.iter().map(|(c, _)| c);
    let input_schema_fn = match &attrs.input_schema {
        Some(path) => quote! {
            fn __sake_input_schema() -> ::sake::__private::serde_json::Value {
                let f: fn() -> ::sake::__private::serde_json::Value = #path;
                f()
            }
        },
        None => quote! {
            fn __sake_input_schema() -> ::sake::__private::serde_json::Value {
                ::sake::__private::input_schema::<__SakeArgs>()
            }
        },
    };
    let location = location();
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, unused, clippy::all, clippy::pedantic)]
        const _: () = {
            use ::sake::__private::{ViaContent as _, ViaResultStructured as _, ViaStructured as _};
            #args
            #input_schema_fn
            #states_fn
            fn __sake_output_schema() -> ::core::option::Option<::sake::__private::serde_json::Value> {
                #probe.output_schema()
            }
            fn __sake_call(
                __sake_raw: ::core::option::Option<&::sake::__private::RawValue>,
                __sake_ctx: ::sake::Context,
            ) -> ::sake::__private::ToolFuture {
                let __SakeArgs { #(#idents),* } =
                    match ::sake::__private::decode_tool_args::<__SakeArgs>(#name, __sake_raw) {
                        ::core::result::Result::Ok(v) => v,
                        ::core::result::Result::Err(e) => return ::sake::__private::ready_tool(e),
                    };
                #take_states
                ::std::boxed::Box::pin(async move {
                    let __sake_out: #ret = #call;
                    #probe.convert(__sake_out)
                })
            }
            ::sake::__private::inventory::submit! {
                ::sake::__private::ToolDef {
                    name: #name,
                    title: #title,
                    description: #description,
                    hints: ::sake::__private::ToolHints {
                        title: #h_title, read_only: #ro, destructive: #de, idempotent: #id, open_world: #ow,
                    },
                    icons: #icons,
                    input_schema: __sake_input_schema,
                    output_schema: __sake_output_schema,
                    call: __sake_call,
                    requires: &[#(#requires),*],
                    states: __sake_states,
                    location: #location,
                }
            }
        };
    }
}

fn completer(attrs: &ItemAttrs) -> (TokenStream, TokenStream) {
    match &attrs.complete {
        Some(path) => (
            quote! {
                fn __sake_complete(
                    req: ::sake::__private::CompletionRequest,
                ) -> ::sake::__private::BoxFuture<::sake::Completion> {
                    ::sake::__private::complete_with(#path, req)
                }
            },
            quote!(::core::option::Option::Some(__sake_complete)),
        ),
        None => (quote!(), quote!(::core::option::Option::None)),
    }
}

pub(crate) fn prompt(cx: &Ctxt, attrs: &ItemAttrs, func: &Func) -> TokenStream {
    let (name, _) = item_name(attrs, func);
    let Some(description) = &func.description else {
        cx.error_at(
            func.ident().span(),
            "a #[prompt] needs a description: write a `///` doc comment above the function (clients and the official conformance suite reject prompts without one)",
        );
        return quote!();
    };
    let (args, idents) = args_struct(
        func,
        true,
        quote!(::sake::__private::assert_prompt_argument),
    );
    let (take_states, states_fn) = states(func, quote!(::sake::__private::ready_prompt_error));
    let ret = &func.ret;
    let convert = quote_spanned!(ret.span()=> ::sake::__private::IntoGetPromptResult::into_get_prompt_result(__sake_out));
    let call = call(func);
    let title = opt_str(&attrs.title);
    let icons = icons(&attrs.icons);
    let (complete_fn, complete) = completer(attrs);
    let location = location();
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, unused, clippy::all, clippy::pedantic)]
        const _: () = {
            #args
            #complete_fn
            #states_fn
            fn __sake_arguments() -> ::sake::__private::serde_json::Value {
                ::sake::__private::input_schema::<__SakeArgs>()
            }
            fn __sake_get(
                __sake_raw: ::core::option::Option<&::sake::__private::RawValue>,
                __sake_ctx: ::sake::Context,
            ) -> ::sake::__private::PromptFuture {
                let __SakeArgs { #(#idents),* } =
                    match ::sake::__private::decode_prompt_args::<__SakeArgs>(#name, __sake_raw) {
                        ::core::result::Result::Ok(v) => v,
                        ::core::result::Result::Err(e) => return ::sake::__private::ready_prompt_error(e),
                    };
                #take_states
                ::std::boxed::Box::pin(async move {
                    let __sake_out: #ret = #call;
                    #convert
                })
            }
            ::sake::__private::inventory::submit! {
                ::sake::__private::PromptDef {
                    name: #name,
                    title: #title,
                    description: #description,
                    icons: #icons,
                    arguments: __sake_arguments,
                    get: __sake_get,
                    complete: #complete,
                    states: __sake_states,
                    location: #location,
                }
            }
        };
    }
}

/// The variables of a level-1 URI template, or why it is not one.
fn template_vars(uri: &str) -> Result<Vec<String>, String> {
    let mut vars = Vec::new();
    let mut rest = uri;
    let mut last_was_var = false;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err("a `}` without its `{`".into());
        }
        if open > 0 {
            last_was_var = false;
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("a `{` without its `}`")?;
        let name = &after[..close];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "`{{{name}}}` is not a level-1 variable (letters, digits and `_` only; no operators such as + # / ? &)"
            ));
        }
        if last_was_var {
            return Err("two variables must be separated by literal text".into());
        }
        if vars.iter().any(|v| v == name) {
            return Err(format!("variable `{name}` appears twice"));
        }
        vars.push(name.to_owned());
        last_was_var = true;
        rest = &after[close + 1..];
    }
    Ok(vars)
}

pub(crate) fn resource(cx: &Ctxt, attrs: &ItemAttrs, func: &Func, attr_span: Span) -> TokenStream {
    let Some(uri) = &attrs.uri else {
        cx.error_at(attr_span, "#[resource] needs `uri = \"scheme://…\"` (a URI, or a template such as \"users://{id}/profile\")");
        return quote!();
    };
    let vars = match template_vars(&uri.value()) {
        Ok(v) => v,
        Err(reason) => {
            cx.error_spanned_by(uri, format!("invalid URI template: {reason}"));
            return quote!();
        }
    };
    let args: Vec<_> = func.arguments().collect();
    for v in &vars {
        if !args.iter().any(|p| p.ident == v) {
            cx.error_spanned_by(
                uri,
                format!("template variable `{{{v}}}` has no parameter: add `{v}: T` to the function, where T: FromStr (String, u64, …)"),
            );
        }
    }
    let mut parses = Vec::new();
    for p in &args {
        let id = &p.ident;
        if !vars.iter().any(|v| p.ident == v) {
            cx.error_spanned_by(
                id,
                format!("parameter `{id}` is not a variable of the URI template {:?}: a #[resource] function takes the template's variables and an optional Context", uri.value()),
            );
            continue;
        }
        if let Some(a) = p.docs.first().or(p.forwarded.first()) {
            cx.error_spanned_by(
                a,
                "a URI variable takes no doc comment, #[serde] or #[schemars]",
            );
        }
        let ty = &p.ty;
        let name = id.to_string();
        parses.push(quote_spanned! {ty.span()=>
            let #id: #ty = match ::sake::__private::parse_var::<#ty>(#name, __sake_req.var(#name)) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(e) => return ::sake::__private::ready_resource_error(e),
            };
        });
    }
    if cx.has_errors() {
        return quote!();
    }
    let (name, _) = item_name(attrs, func);
    let (take_states, states_fn) = states(func, quote!(::sake::__private::ready_resource_error));
    let ret = &func.ret;
    let mime = opt_str(&attrs.mime_type);
    let convert = quote_spanned!(ret.span()=>
        ::sake::__private::IntoReadResourceResult::into_read_resource_result(__sake_out, &__sake_req.uri, #mime));
    let call = call(func);
    let title = opt_str(&attrs.title);
    let description = opt_string(&func.description);
    let icons = icons(&attrs.icons);
    let (complete_fn, complete) = completer(attrs);
    let location = location();
    let fn_name = format_ident!("__sake_read");
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, unused, clippy::all, clippy::pedantic)]
        const _: () = {
            #complete_fn
            #states_fn
            fn #fn_name(
                __sake_req: ::sake::__private::ResourceRequest,
                __sake_ctx: ::sake::Context,
            ) -> ::sake::__private::ResourceFuture {
                #(#parses)*
                #take_states
                ::std::boxed::Box::pin(async move {
                    let __sake_out: #ret = #call;
                    #convert
                })
            }
            ::sake::__private::inventory::submit! {
                ::sake::__private::ResourceDef {
                    uri: #uri,
                    name: #name,
                    title: #title,
                    description: #description,
                    mime_type: #mime,
                    icons: #icons,
                    read: #fn_name,
                    complete: #complete,
                    states: __sake_states,
                    location: #location,
                }
            }
        };
    }
}

pub(crate) fn span_of_attr(attrs: &ItemAttrs, fallback: Span) -> Span {
    attr::span_of(&attrs.name, fallback)
}
