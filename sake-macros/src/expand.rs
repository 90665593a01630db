//! Code generation: the argument struct, the glue functions and the registry entry.
//!
//! It runs only when parsing and validation found nothing wrong, and reports nothing itself:
//! what the compiler checks (argument and return types) it leaves to the compiler, spanned
//! at the user's tokens. Every attribute's glue has one shape ([`Glue`]), and the three
//! function attributes call the user's function through one entry function ([`Entry`]).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::LitStr;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::ast::{Func, Item, ParamKind};
use crate::attr::{Html, Icon, ItemAttrs, TASK_SUPPORT, UiLink};
use crate::view::View;

/// The glue of an item that parsed and validated.
pub(crate) fn item(attrs: &ItemAttrs, item: &Item) -> TokenStream {
    match item {
        Item::Tool(func) => tool(attrs, func),
        Item::Prompt(func) => prompt(attrs, func),
        Item::Resource(func) => resource(attrs, func),
        Item::View(view) => self::view(attrs, view),
    }
}

/// The one shape of every attribute's glue: a `const` named after the item, holding the
/// items the descriptor points at, one `inventory::submit!` of the descriptor, and what
/// registers beside it.
struct Glue {
    /// The `const`'s name: see [`glue_const`].
    name: syn::Ident,
    /// The items the descriptor points at (the argument struct, the entry function, …).
    items: TokenStream,
    /// The descriptor's type in `__private`: `ToolDef`, `PromptDef`, `ResourceDef`, `ViewDef`.
    def: &'static str,
    /// The descriptor's fields, `field: value,` each.
    fields: TokenStream,
    /// Items after the descriptor (a tool's layer).
    after: TokenStream,
}

impl Glue {
    fn render(self) -> TokenStream {
        let sake = crate::krate::path();
        let Glue {
            name,
            items,
            def,
            fields,
            after,
        } = self;
        let def = format_ident!("{def}");
        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, unused, clippy::all, clippy::pedantic)]
            const #name: () = {
                #items
                #sake::__private::inventory::submit! {
                    #sake::__private::#def {
                        #fields
                    }
                }
                #after
            };
        }
    }
}

/// The function the registry calls for a tool, a prompt or a resource: it binds the
/// arguments (returning the error at once on bad input), takes the states, and calls the
/// user's function in a boxed future, its output converted.
struct Entry {
    /// The function's name, which the descriptor names.
    name: &'static str,
    /// Its first parameter, the request (the `Context` follows).
    request: TokenStream,
    /// The future type it returns, in `__private`.
    future: &'static str,
    /// Statements that bind each argument to its parameter's name.
    bind: TokenStream,
    /// The conversion of `__sake_out` into the answer.
    convert: TokenStream,
    /// What a missing state or principal returns, given the error.
    on_missing: TokenStream,
}

impl Entry {
    /// The entry function, and `__sake_states` (the states the registry checks).
    fn render(self, func: &Func) -> (TokenStream, TokenStream) {
        let sake = crate::krate::path();
        let Entry {
            name,
            request,
            future,
            bind,
            convert,
            on_missing,
        } = self;
        let (name, future) = (format_ident!("{name}"), format_ident!("{future}"));
        let (take_states, states_fn) = states(func, on_missing);
        let ret = &func.ret;
        let call = call(func);
        let entry = quote! {
            fn #name(
                #request,
                __sake_ctx: #sake::Context,
            ) -> #sake::__private::#future {
                #bind
                #take_states
                ::std::boxed::Box::pin(async move {
                    let __sake_out: #ret = #call;
                    #convert
                })
            }
        };
        (entry, states_fn)
    }
}

fn opt_str(v: &Option<LitStr>) -> TokenStream {
    match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

fn opt_string(v: Option<&String>) -> TokenStream {
    match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

fn icons(icons: &[Icon]) -> TokenStream {
    let sake = crate::krate::path();
    let items = icons.iter().map(|i| {
        let src = &i.src;
        let mime = opt_str(&i.mime_type);
        let theme = opt_str(&i.theme);
        let sizes = &i.sizes;
        quote!(#sake::__private::IconDef { src: #src, mime_type: #mime, sizes: &[#(#sizes),*], theme: #theme })
    });
    quote!(&[#(#items),*])
}

/// Where the item is, for start-up errors.
fn location() -> TokenStream {
    let sake = crate::krate::path();
    quote!(#sake::__private::Location {
        file: ::core::file!(),
        line: ::core::line!(),
        module: ::core::module_path!(),
    })
}

/// The name: `name = "..."` or the function's.
fn item_name(attrs: &ItemAttrs, func: &Func) -> String {
    match &attrs.name {
        Some(n) => n.value(),
        None => func.ident().to_string(),
    }
}

/// Whether the function takes a `Principal` (not an `Option`): it runs only for a signed-in
/// caller.
fn needs_principal(func: &Func) -> bool {
    func.params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Principal { optional: false }))
}

/// `scopes(...)`, as a `&'static [&'static str]`.
fn scopes(attrs: &ItemAttrs) -> TokenStream {
    let list = attrs.scopes.iter().flat_map(|s| &s.list);
    quote!(&[#(#list),*])
}

/// What an argument struct is checked against, and the runtime's glue for it.
struct ArgsKind {
    /// The trait every argument type must implement (with its `on_unimplemented` message).
    bound: TokenStream,
    /// The decoder's error type.
    error: TokenStream,
    /// The `ArgsGlue` constant.
    glue: TokenStream,
    /// What a decoding error returns, given the error.
    on_error: TokenStream,
}

/// The argument struct and `__SAKE_ARGS` (its schema and decoder); and the statement that
/// decodes the request's arguments (`__sake_raw`) and binds each to its parameter's name.
///
/// The struct is generic over the argument types (`__SakeA0`…) so that the derives never see
/// a concrete type: they compile even when a type does not qualify. The one place that names
/// the types is the call of `__sake_glue::<T0, T1, …>()`, whose bounds are `kind.bound`; each
/// type there is spanned at its parameter, so a type that does not qualify is reported once,
/// at the parameter, in the trait's words. A parameter with custom serde or schemars
/// attributes is a concrete field instead (the derives check it) — see `ast::is_custom`.
fn args_struct(func: &Func, name: &str, kind: &ArgsKind) -> (TokenStream, TokenStream) {
    let sake = crate::krate::path();
    let facade = crate::krate::name();
    let serde_crate = LitStr::new(&format!("::{facade}::__private::serde"), Span::call_site());
    let schemars_crate = LitStr::new(
        &format!("::{facade}::__private::schemars"),
        Span::call_site(),
    );
    let ArgsKind {
        bound,
        error,
        glue,
        on_error,
    } = kind;
    let mut fields = Vec::new();
    let mut idents = Vec::new();
    let mut params = Vec::new();
    let mut bounded = Vec::new();
    let mut types = Vec::new();
    let mut checks = Vec::new();
    for p in func.arguments() {
        let (docs, fwd, id, ty) = (&p.docs, &p.forwarded, &p.ident, &p.ty);
        // `#[arg(header = "Name")]`: the schema says so, and the type must be one a header
        // can carry.
        let (header, header_bound) = match &p.header {
            Some(h) => (
                quote!(#[schemars(extend("x-mcp-header" = #h))]),
                quote!(+ #sake::__private::HeaderArgument),
            ),
            None => (quote!(), quote!()),
        };
        let field_ty = if p.custom {
            if p.header.is_some() {
                let sake = crate::krate::path_at(ty.span());
                checks.push(
                    quote_spanned!(ty.span()=> #sake::__private::assert_header_argument::<#ty>();),
                );
            }
            quote!(#ty)
        } else {
            let param = format_ident!("__SakeA{}", params.len());
            bounded.push(quote!(#param: #bound #header_bound));
            types.push(quote_spanned!(ty.span()=> #ty));
            params.push(param.clone());
            quote!(#param)
        };
        fields.push(quote!(#(#docs)* #(#fwd)* #header #id: #field_ty));
        idents.push(id.clone());
    }
    let tokens = quote! {
        #[derive(#sake::__private::serde::Deserialize, #sake::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        struct __SakeArgs<#(#params),*> { #(#fields,)* }

        const fn __sake_glue<#(#bounded),*>()
            -> #sake::__private::ArgsGlue<__SakeArgs<#(#params),*>, #error>
        {
            #sake::__private::ArgsGlue::<__SakeArgs<#(#params),*>, #error>::#glue
        }

        const __SAKE_ARGS: #sake::__private::ArgsGlue<__SakeArgs<#(#types),*>, #error> =
            __sake_glue::<#(#types),*>();

        fn __sake_argument_checks() { #(#checks)* }
    };
    let bind = quote! {
        let __SakeArgs { #(#idents),* } =
            match (__SAKE_ARGS.decode)(#name, __sake_raw) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(e) => return #on_error(e),
            };
    };
    (tokens, bind)
}

/// The name of the `const` that holds the generated items: named (after the function), not
/// `_`, so that it is also a valid item in an `impl` block, where the attribute on an
/// associated function then fails only on the call of the function (see `call`). A view's is
/// `__SAKE_VIEW_` and its struct's name.
fn glue_const(func: &Func) -> syn::Ident {
    format_ident!("__SAKE_{}", func.ident().unraw())
}

/// The `State<T>` parameters: taken from the context before the call (a missing state is a
/// start-up error, so the fallback is never reached), and the list the registry checks.
fn states(func: &Func, on_missing: TokenStream) -> (TokenStream, TokenStream) {
    let sake = crate::krate::path();
    let mut takes = Vec::new();
    let mut needs = Vec::new();
    for p in &func.params {
        if let ParamKind::Principal { .. } = p.kind {
            let (id, ty) = (&p.ident, &p.ty);
            // `PrincipalParam` is implemented by `sake::auth::Principal` and its `Option` only:
            // another type named `Principal` stops here with an error that says so.
            let sake = crate::krate::path_at(ty.span());
            let param = quote_spanned!(ty.span()=> <#ty as #sake::__private::PrincipalParam>);
            takes.push(quote_spanned! {ty.span()=>
                let #id: #ty = match #param::from_context(&__sake_ctx) {
                    ::core::option::Option::Some(p) => p,
                    ::core::option::Option::None => return #on_missing(
                        #sake::__private::missing_principal()
                    ),
                };
            });
        }
        if let ParamKind::State = p.kind {
            let (id, ty) = (&p.ident, &p.ty);
            // `StateParam` is implemented by `sake::State<T>` only: another type named `State`
            // stops here with an error that says so, at the parameter's type.
            let sake = crate::krate::path_at(ty.span());
            let param = quote_spanned!(ty.span()=> <#ty as #sake::__private::StateParam>);
            takes.push(quote_spanned! {ty.span()=>
                let #id: #ty = match #param::from_context(&__sake_ctx) {
                    ::core::option::Option::Some(s) => s,
                    ::core::option::Option::None => return #on_missing(
                        #sake::__private::missing_state(#param::need().type_name)
                    ),
                };
            });
            needs.push(quote_spanned!(ty.span()=> #param::need()));
        }
    }
    (
        quote!(#(#takes)*),
        quote! {
            fn __sake_states() -> ::std::vec::Vec<#sake::__private::StateNeed> {
                ::std::vec![#(#needs),*]
            }
        },
    )
}

/// Whether the function takes the `Context`.
fn takes_context(func: &Func) -> bool {
    func.params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Context))
}

/// The call of the user's function with its arguments and context.
fn call(func: &Func) -> TokenStream {
    let ident = func.ident();
    let args = func.params.iter().map(|p| match p.kind {
        ParamKind::Argument | ParamKind::State | ParamKind::Principal { .. } => {
            let id = &p.ident;
            quote!(#id)
        }
        ParamKind::Context => {
            let ty = &p.ty;
            quote_spanned!(ty.span()=> ::core::convert::identity::<#ty>(__sake_ctx))
        }
    });
    let drop_ctx = if takes_context(func) {
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

fn tool(attrs: &ItemAttrs, func: &Func) -> TokenStream {
    let sake = crate::krate::path();
    let name = item_name(attrs, func);
    let description = func.description.as_deref().unwrap_or_default();
    let (args, bind) = args_struct(
        func,
        &name,
        &ArgsKind {
            bound: quote!(#sake::__private::ToolArgument),
            error: quote!(#sake::CallToolResult),
            glue: quote!(TOOL),
            on_error: quote!(#sake::__private::ready_tool),
        },
    );
    let ret = &func.ret;
    // Spanned at the return type, so that a type no conversion applies to is reported there.
    let sake_at = crate::krate::path_at(ret.span());
    let probe = quote_spanned!(ret.span()=> (&&&#sake_at::__private::Probe::<#ret>::NEW).sake_output_kind());
    let output_schema = quote_spanned!(ret.span()=> #probe.output_schema());
    let convert = quote_spanned!(ret.span()=> #probe.convert(__sake_out));
    let (entry, states_fn) = Entry {
        name: "__sake_call",
        request: quote!(__sake_raw: ::core::option::Option<&#sake::__private::RawValue>),
        future: "ToolFuture",
        bind,
        convert,
        on_missing: quote!(#sake::__private::ready_tool_internal),
    }
    .render(func);
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
    let requires = attrs.requires.iter().map(|c| c.name);
    let scopes = scopes(attrs);
    let principal = needs_principal(func);
    let takes_context = takes_context(func);
    let task_support = attrs
        .task
        .as_ref()
        .and_then(|t| TASK_SUPPORT.iter().find(|(v, _)| *v == t.value()))
        .map_or("Forbidden", |(_, variant)| variant);
    let task_support = format_ident!("{task_support}");
    // `input_schema = path`: served verbatim instead of the generated one.
    let input_schema = match &attrs.input_schema {
        Some(path) => quote! {{
            let f: fn() -> #sake::__private::serde_json::Value = #path;
            f()
        }},
        None => quote!((__SAKE_ARGS.schema)()),
    };
    let ui = tool_ui(attrs);
    let location = location();
    // `layer = expr`: registered beside the tool, made when a server is built; a value that is
    // no layer over MCP calls is reported at the expression.
    let layer = attrs.layer.as_ref().map(|expr| {
        let sake_at = crate::krate::path_at(expr.span());
        let made = quote_spanned!(expr.span()=> #sake_at::__private::LayerFn::new(#expr));
        quote! {
            fn __sake_layer() -> #sake::__private::LayerFn {
                #made
            }
            #sake::__private::inventory::submit! {
                #sake::__private::ToolLayer { tool: #name, layer: __sake_layer }
            }
        }
    });
    Glue {
        name: glue_const(func),
        items: quote! {
            use #sake::__private::{
                ViaContent as _, ViaNothing as _, ViaResultStructured as _, ViaStructured as _,
            };
            #args
            #states_fn
            fn __sake_input_schema() -> #sake::__private::serde_json::Value {
                #input_schema
            }
            fn __sake_output_schema() -> ::core::option::Option<#sake::__private::serde_json::Value> {
                #output_schema
            }
            #entry
        },
        def: "ToolDef",
        fields: quote! {
            name: #name,
            title: #title,
            description: #description,
            hints: #sake::__private::ToolHints {
                title: #h_title, read_only: #ro, destructive: #de, idempotent: #id, open_world: #ow,
            },
            icons: #icons,
            input_schema: __sake_input_schema,
            output_schema: __sake_output_schema,
            call: __sake_call,
            requires: &[#(#requires),*],
            scopes: #scopes,
            principal: #principal,
            task_support: #sake::__private::TaskSupport::#task_support,
            context: #takes_context,
            ui: #ui,
            states: __sake_states,
            location: #location,
        },
        after: quote!(#layer),
    }
    .render()
}

/// `ui = …` and `visibility(…)`: the tool's `ToolUiDef`. A view named by its struct is
/// checked by the compiler (`View` is implemented by `#[view]` structs only), at the path.
fn tool_ui(attrs: &ItemAttrs) -> TokenStream {
    let sake = crate::krate::path();
    if attrs.ui.is_none() && attrs.visibility.is_none() {
        return quote!(#sake::__private::ToolUiDef::NONE);
    }
    let resource_uri = match &attrs.ui {
        None => quote!(::core::option::Option::None),
        Some(UiLink::Uri(uri)) => quote!(::core::option::Option::Some(#uri)),
        Some(UiLink::View(path)) => {
            let sake = crate::krate::path_at(path.span());
            let uri = quote_spanned!(path.span()=> <#path as #sake::__private::View>::URI);
            quote!(::core::option::Option::Some(#uri))
        }
    };
    let visibility = attrs.visibility.iter().flat_map(|v| &v.list).map(|w| {
        let variant = format_ident!("{}", w.wire);
        quote!(#sake::__private::Visibility::#variant)
    });
    quote! {
        #sake::__private::ToolUiDef {
            resource_uri: #resource_uri,
            visibility: &[#(#visibility),*],
        }
    }
}

fn completer(attrs: &ItemAttrs) -> (TokenStream, TokenStream) {
    let sake = crate::krate::path();
    match &attrs.complete {
        Some(path) => (
            quote! {
                fn __sake_complete(
                    req: #sake::__private::CompletionRequest,
                ) -> #sake::__private::BoxFuture<#sake::Completion> {
                    #sake::__private::complete_with(#path, req)
                }
            },
            quote!(::core::option::Option::Some(__sake_complete)),
        ),
        None => (quote!(), quote!(::core::option::Option::None)),
    }
}

fn prompt(attrs: &ItemAttrs, func: &Func) -> TokenStream {
    let sake = crate::krate::path();
    let name = item_name(attrs, func);
    let description = func.description.as_deref().unwrap_or_default();
    let (args, bind) = args_struct(
        func,
        &name,
        &ArgsKind {
            bound: quote!(#sake::__private::PromptArgumentType),
            error: quote!(#sake::RpcError),
            glue: quote!(PROMPT),
            on_error: quote!(#sake::__private::ready_prompt_error),
        },
    );
    let ret = &func.ret;
    let sake_at = crate::krate::path_at(ret.span());
    let convert = quote_spanned!(ret.span()=> #sake_at::__private::IntoGetPromptResult::into_get_prompt_result(__sake_out));
    let (entry, states_fn) = Entry {
        name: "__sake_get",
        request: quote!(__sake_raw: ::core::option::Option<&#sake::__private::RawValue>),
        future: "PromptFuture",
        bind,
        convert,
        on_missing: quote!(#sake::__private::ready_prompt_error),
    }
    .render(func);
    let title = opt_str(&attrs.title);
    let icons = icons(&attrs.icons);
    let (complete_fn, complete) = completer(attrs);
    let scopes = scopes(attrs);
    let principal = needs_principal(func);
    let location = location();
    Glue {
        name: glue_const(func),
        items: quote! {
            #args
            #complete_fn
            #states_fn
            fn __sake_arguments() -> #sake::__private::serde_json::Value {
                (__SAKE_ARGS.schema)()
            }
            #entry
        },
        def: "PromptDef",
        fields: quote! {
            name: #name,
            title: #title,
            description: #description,
            icons: #icons,
            arguments: __sake_arguments,
            get: __sake_get,
            complete: #complete,
            scopes: #scopes,
            principal: #principal,
            states: __sake_states,
            location: #location,
        },
        after: quote!(),
    }
    .render()
}

/// A resource. Validation made sure that `uri` is given and parses, and that the
/// function's arguments are exactly the template's variables.
fn resource(attrs: &ItemAttrs, func: &Func) -> TokenStream {
    let sake = crate::krate::path();
    let uri = attrs
        .uri
        .as_ref()
        .map_or_else(|| quote!(""), ToTokens::to_token_stream);
    let parses = func.arguments().map(|p| {
        let (id, ty) = (&p.ident, &p.ty);
        let name = id.to_string();
        let sake = crate::krate::path_at(ty.span());
        quote_spanned! {ty.span()=>
            let #id: #ty = match #sake::__private::parse_var::<#ty>(#name, __sake_req.var(#name)) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(e) => return #sake::__private::ready_resource_error(e),
            };
        }
    });
    let name = item_name(attrs, func);
    let ret = &func.ret;
    let mime = opt_str(&attrs.mime_type);
    let sake_at = crate::krate::path_at(ret.span());
    let convert = quote_spanned!(ret.span()=>
        #sake_at::__private::IntoReadResourceResult::into_read_resource_result(__sake_out, &__sake_req.uri, #mime));
    let (entry, states_fn) = Entry {
        name: "__sake_read",
        request: quote!(__sake_req: #sake::__private::ResourceRequest),
        future: "ResourceFuture",
        bind: quote!(#(#parses)*),
        convert,
        on_missing: quote!(#sake::__private::ready_resource_error),
    }
    .render(func);
    let title = opt_str(&attrs.title);
    let description = opt_string(func.description.as_ref());
    let icons = icons(&attrs.icons);
    let (complete_fn, complete) = completer(attrs);
    let scopes = scopes(attrs);
    let principal = needs_principal(func);
    let location = location();
    Glue {
        name: glue_const(func),
        items: quote! {
            #complete_fn
            #states_fn
            #entry
        },
        def: "ResourceDef",
        fields: quote! {
            uri: #uri,
            name: #name,
            title: #title,
            description: #description,
            mime_type: #mime,
            icons: #icons,
            read: __sake_read,
            complete: #complete,
            scopes: #scopes,
            principal: #principal,
            states: __sake_states,
            location: #location,
        },
        after: quote!(),
    }
    .render()
}

/// `impl View for TheStruct`: what `#[tool(ui = TheStruct)]` reads.
pub(crate) fn view_impl(attrs: &ItemAttrs, item: &syn::ItemStruct) -> TokenStream {
    let sake = crate::krate::path();
    let Some(uri) = &attrs.uri else {
        return quote!();
    };
    let ident = &item.ident;
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    quote! {
        impl #impl_generics #sake::__private::View for #ident #ty_generics #where_clause {
            const URI: &'static str = #uri;
        }
    }
}

/// The registration: the HTML (embedded, or the function's glue) and the `ViewDef`.
fn view(attrs: &ItemAttrs, view: &View) -> TokenStream {
    let (item, file) = (&view.item, view.file.as_ref());
    let sake = crate::krate::path();
    let ident = &item.ident;
    let uri = attrs
        .uri
        .as_ref()
        .map_or_else(|| quote!(""), |u| quote!(#u));
    let name = attrs
        .name
        .as_ref()
        .map_or_else(|| ident.unraw().to_string(), LitStr::value);
    let title = opt_str(&attrs.title);
    let description = match crate::ast::doc_text(&item.attrs) {
        Some(d) => quote!(::core::option::Option::Some(#d)),
        None => quote!(::core::option::Option::None),
    };
    let (html_items, html) = match (&attrs.html, file) {
        (Some(Html::Function(path)), _) => {
            let sake_at = crate::krate::path_at(path.span());
            let call =
                quote_spanned!(path.span()=> #sake_at::__private::view_html(#path, __sake_ctx));
            (
                quote! {
                    fn __sake_html(
                        __sake_ctx: #sake::Context,
                    ) -> #sake::__private::BoxFuture<::core::result::Result<::std::string::String, #sake::RpcError>> {
                        #call
                    }
                },
                quote!(#sake::__private::ViewHtml::function(__sake_html)),
            )
        }
        (_, Some(file)) => {
            let include = &file.include;
            let sha256 = &file.sha256;
            (
                quote!(
                    const __SAKE_HTML: &str = ::core::include_str!(#include);
                ),
                quote!(#sake::__private::ViewHtml::embedded(__SAKE_HTML, #sha256)),
            )
        }
        // Validation made sure there is HTML, and reading it did not fail.
        _ => return quote!(),
    };
    let csp = match &attrs.csp {
        None => quote!(::core::option::Option::None),
        Some(c) => {
            let list = |l: &Option<Vec<LitStr>>| {
                let items = l.iter().flatten();
                quote!(&[#(#items),*])
            };
            let (connect, resource, frame, base) = (
                list(&c.connect_domains),
                list(&c.resource_domains),
                list(&c.frame_domains),
                list(&c.base_uri_domains),
            );
            quote!(::core::option::Option::Some(#sake::__private::CspDef {
                connect_domains: #connect,
                resource_domains: #resource,
                frame_domains: #frame,
                base_uri_domains: #base,
            }))
        }
    };
    let permissions = attrs
        .permissions
        .iter()
        .flat_map(|p| &p.list)
        .map(|w| w.wire);
    let domain = opt_str(&attrs.domain);
    let prefers_border = match &attrs.prefers_border {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let location = location();
    Glue {
        name: format_ident!("__SAKE_VIEW_{}", ident.unraw()),
        items: html_items,
        def: "ViewDef",
        fields: quote! {
            uri: #uri,
            name: #name,
            title: #title,
            description: #description,
            html: #html,
            csp: #csp,
            permissions: &[#(#permissions),*],
            domain: #domain,
            prefers_border: #prefers_border,
            location: #location,
        },
        after: quote!(),
    }
    .render()
}
