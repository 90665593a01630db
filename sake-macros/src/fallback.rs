//! What is emitted when the attribute or the function has errors: the function as written
//! (minus the parameter attributes the macro consumes, which the compiler would not know)
//! and every error, and nothing else. The function stays callable, so its callers and tests
//! compile and the only errors are the macro's; no glue is generated, so none of them is a
//! consequence of another.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

pub(crate) fn expand(item: &ItemFn, errors: TokenStream) -> TokenStream {
    quote!(#item #errors)
}

/// The error for an attribute on something other than a function, at the item's keyword and
/// name; the item is emitted unchanged.
pub(crate) fn not_a_function(attr: &str, input: TokenStream) -> TokenStream {
    use syn::Item;
    fn head(keyword: &impl quote::ToTokens, name: impl quote::ToTokens) -> TokenStream {
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
        format!("{attr} goes on a function (`fn` or `async fn`), not on {what}"),
    )
    .to_compile_error();
    quote!(#err #input)
}
