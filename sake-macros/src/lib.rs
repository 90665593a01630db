//! The procedural macros of [sake](https://docs.rs/sake): `#[tool]`, `#[prompt]` and
//! `#[resource]`. Use them through the `sake` crate.
//!
//! Each macro keeps the function as written (minus the parameter attributes it consumes) and
//! adds, in an anonymous `const` block, an argument struct, glue functions, and one
//! `inventory::submit!` of a descriptor. All protocol behaviour lives in the runtime.

mod ast;
mod attr;
mod ctxt;
mod expand;

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;

use crate::attr::Kind;
use crate::ctxt::Ctxt;

fn run(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    let item: syn::ItemFn = match syn::parse(input.clone()) {
        Ok(f) => f,
        Err(_) => {
            let input = proc_macro2::TokenStream::from(input);
            let err = syn::Error::new_spanned(
                &input,
                format!("{} goes on a function (`fn` or `async fn`)", kind.attr()),
            )
            .to_compile_error();
            return quote!(#err #input).into();
        }
    };
    let cx = Ctxt::default();
    let attrs = attr::parse_item_attrs(&cx, kind, args.into());
    let func = ast::Func::analyse(&cx, kind, item);
    let generated = if cx.has_errors() {
        quote!()
    } else {
        match kind {
            Kind::Tool => expand::tool(&cx, &attrs, &func),
            Kind::Prompt => expand::prompt(&cx, &attrs, &func),
            Kind::Resource => {
                let span = expand::span_of_attr(&attrs, Span::call_site());
                expand::resource(&cx, &attrs, &func, span)
            }
        }
    };
    // The function is always emitted, so that an attribute mistake does not also break every
    // caller of the function.
    let item = &func.item;
    let errors = cx.into_tokens();
    quote!(#item #generated #errors).into()
}

/// Registers a function as an MCP tool.
///
/// The doc comment is the tool's description; each parameter is an argument (its doc comment
/// is the argument's description), except a `Context`. See the `sake` crate's documentation
/// and docs/macros.md for every option.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    run(Kind::Tool, args, input)
}

/// Registers a function as an MCP prompt. Arguments are `String` (required) or
/// `Option<String>` (optional).
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, input: TokenStream) -> TokenStream {
    run(Kind::Prompt, args, input)
}

/// Registers a function as an MCP resource: a static URI, or an RFC 6570 level-1 template
/// whose variables bind to the parameters of the same names.
#[proc_macro_attribute]
pub fn resource(args: TokenStream, input: TokenStream) -> TokenStream {
    run(Kind::Resource, args, input)
}
