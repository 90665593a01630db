//! What is emitted when the attribute or the item has errors: the item as written (minus the
//! parameter attributes the macro consumes, which the compiler would not know; with a view's
//! `View` impl) and every error, and nothing else. A function stays callable and a view
//! nameable, so their users and tests compile and the only errors are the macro's; no glue
//! is generated, so none of them is a consequence of another.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::Kind;

pub(crate) fn expand(emitted: TokenStream, errors: TokenStream) -> TokenStream {
    quote!(#emitted #errors)
}

/// The error for an attribute on another kind of item than it goes on (a function; a unit
/// struct for `#[view]`), at the item's keyword and name; the item is emitted unchanged.
pub(crate) fn wrong_item(kind: Kind, input: TokenStream) -> TokenStream {
    use syn::Item;
    fn head(keyword: &impl quote::ToTokens, name: impl quote::ToTokens) -> TokenStream {
        quote!(#keyword #name)
    }
    let (what, what_tokens) = match syn::parse2::<Item>(input.clone()) {
        Ok(Item::Fn(i)) => (
            "a function (a view's HTML from a function is `html = the_function` on a unit struct)",
            head(&i.sig.fn_token, &i.sig.ident),
        ),
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
    let message = match kind {
        Kind::View => format!(
            "#[view] goes on a unit struct that names the view (`struct MyView;`), not on {what}"
        ),
        Kind::Tool | Kind::Prompt | Kind::Resource => format!(
            "{} goes on a function (`fn` or `async fn`), not on {what}",
            kind.attr()
        ),
    };
    let err = syn::Error::new_spanned(what_tokens, message).to_compile_error();
    quote!(#err #input)
}
