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
use quote::quote;

use crate::attr::Kind;
use crate::ctxt::Ctxt;

fn run(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    let item: syn::ItemFn = match syn::parse(input.clone()) {
        Ok(f) => f,
        Err(_) => return not_a_function(kind, input.into()),
    };
    let args = proc_macro2::TokenStream::from(args);
    let cx = Ctxt::default();
    let attrs = attr::parse_item_attrs(&cx, kind, args.clone());
    let func = ast::Func::analyse(&cx, kind, item);
    let generated = if cx.has_errors() {
        quote!()
    } else {
        match kind {
            Kind::Tool => expand::tool(&cx, &attrs, &func),
            Kind::Prompt => expand::prompt(&cx, &attrs, &func),
            Kind::Resource => expand::resource(&cx, &attrs, &func, &args),
        }
    };
    // The function is always emitted, so that an attribute mistake does not also break every
    // caller of the function.
    let item = &func.item;
    let errors = cx.into_tokens();
    quote!(#item #generated #errors).into()
}

/// The error for an attribute on something other than a function, at the item's keyword and
/// name; the item is emitted unchanged.
fn not_a_function(kind: Kind, input: proc_macro2::TokenStream) -> TokenStream {
    use syn::Item;
    fn head(
        keyword: &impl quote::ToTokens,
        name: impl quote::ToTokens,
    ) -> proc_macro2::TokenStream {
        quote!(#keyword #name)
    }
    let (what, what_tokens) = match syn::parse2::<Item>(input.clone()) {
        Ok(Item::Struct(i)) => ("a struct", head(&i.struct_token, &i.ident)),
        Ok(Item::Enum(i)) => ("an enum", head(&i.enum_token, &i.ident)),
        Ok(Item::Union(i)) => ("a union", head(&i.union_token, &i.ident)),
        Ok(Item::Const(i)) => ("a constant", head(&i.const_token, &i.ident)),
        Ok(Item::Static(i)) => ("a static", head(&i.static_token, &i.ident)),
        Ok(Item::Mod(i)) => ("a module", head(&i.mod_token, &i.ident)),
        Ok(Item::Trait(i)) => ("a trait", head(&i.trait_token, &i.ident)),
        Ok(Item::Type(i)) => ("a type alias", head(&i.type_token, &i.ident)),
        Ok(Item::Impl(i)) => ("an impl block", head(&i.impl_token, quote!())),
        Ok(Item::Use(i)) => ("a use declaration", head(&i.use_token, quote!())),
        _ => ("this item", input.clone()),
    };
    let err = syn::Error::new_spanned(
        what_tokens,
        format!(
            "{} goes on a function (`fn` or `async fn`), not on {what}",
            kind.attr()
        ),
    )
    .to_compile_error();
    quote!(#err #input).into()
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
