//! `#[view]`: an MCP Apps view declared on a unit struct. The struct names the view (so that
//! `#[tool(ui = TheStruct)]` is checked by the compiler); its HTML is a file embedded at
//! compile time, read here to check it is an HTML document and to take its SHA-256, or a
//! function called on each read.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use sha2::Digest as _;
use syn::LitStr;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::ast::doc_text;
use crate::attr::{self, Html, ItemAttrs, Kind};
use crate::ctxt::Ctxt;
use crate::valid;

/// An HTML file read at compile time.
struct File {
    /// The path `include_str!` is given.
    include: String,
    /// The SHA-256 of its bytes, lowercase hex.
    sha256: String,
}

pub(crate) fn run(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: syn::ItemStruct = match syn::parse2(input.clone()) {
        Ok(s) => s,
        Err(_) => return not_a_struct(input),
    };
    let cx = Ctxt::default();
    let attrs = attr::parse_item_attrs(&cx, Kind::View, args);
    valid::view(&cx, &attrs, &item);
    let file = match &attrs.html {
        Some(Html::File(name)) => read(&cx, name),
        _ => None,
    };
    // The struct and its `View` impl are emitted whatever the errors, so that the tools that
    // name it report nothing more.
    let view_impl = view_impl(&attrs, &item);
    match cx.check() {
        Ok(()) => {
            let submit = expand(&attrs, &item, file.as_ref());
            quote!(#item #view_impl #submit)
        }
        Err(errors) => quote!(#item #view_impl #errors),
    }
}

/// The error for `#[view]` on something other than a struct, at the item's keyword and name.
fn not_a_struct(input: TokenStream) -> TokenStream {
    fn head(keyword: &impl quote::ToTokens, name: impl quote::ToTokens) -> TokenStream {
        quote!(#keyword #name)
    }
    let (what, tokens) = match syn::parse2::<syn::Item>(input.clone()) {
        Ok(syn::Item::Fn(i)) => (
            "a function (a view's HTML from a function is `html = the_function` on a unit struct)",
            head(&i.sig.fn_token, &i.sig.ident),
        ),
        Ok(syn::Item::Enum(i)) => ("an enum", head(&i.enum_token, &i.ident)),
        Ok(syn::Item::Union(i)) => ("a union", head(&i.union_token, &i.ident)),
        Ok(syn::Item::Const(i)) => ("a constant", head(&i.const_token, &i.ident)),
        Ok(syn::Item::Static(i)) => ("a static", head(&i.static_token, &i.ident)),
        Ok(syn::Item::Mod(i)) => ("a module", head(&i.mod_token, &i.ident)),
        Ok(syn::Item::Trait(i)) => ("a trait", head(&i.trait_token, &i.ident)),
        Ok(syn::Item::Type(i)) => ("a type alias", head(&i.type_token, &i.ident)),
        Ok(syn::Item::Impl(i)) => ("an impl block", head(&i.impl_token, quote!())),
        _ => ("this item", input.clone()),
    };
    let err = syn::Error::new_spanned(
        tokens,
        format!(
            "#[view] goes on a unit struct that names the view (`struct MyView;`), not on {what}"
        ),
    )
    .to_compile_error();
    quote!(#err #input)
}

/// Where a file named in the attribute is: next to the source file that names it, as
/// `include_str!` finds it; under the crate's manifest directory when the source file is
/// unknown (the attribute came out of another macro).
fn locate(name: &LitStr) -> (PathBuf, bool) {
    let relative = PathBuf::from(name.value());
    if relative.is_absolute() {
        return (relative, true);
    }
    if let Some(dir) = name
        .span()
        .local_file()
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
    {
        return (dir.join(&relative), false);
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(PathBuf::new, PathBuf::from);
    (manifest.join(relative), true)
}

/// Reads `html = "…"`: it must exist, be UTF-8 and be an HTML document. Errors go to `cx`,
/// at the file name.
fn read(cx: &Ctxt, name: &LitStr) -> Option<File> {
    let (path, absolute) = locate(name);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            cx.error_spanned_by(
                name,
                format!(
                    "cannot read the view's HTML {:?} (looked for {}): {e}; the file name is relative to this source file, as with include_str!",
                    name.value(),
                    path.display()
                ),
            );
            return None;
        }
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        cx.error_spanned_by(
            name,
            format!(
                "{:?} is not UTF-8 text: a view is an HTML document",
                name.value()
            ),
        );
        return None;
    };
    if !is_html_document(text) {
        cx.error_spanned_by(
            name,
            format!(
                "{:?} is not an HTML document: a view starts with `<!DOCTYPE html>` (or `<html>`)",
                name.value()
            ),
        );
        return None;
    }
    let sha256 = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // The name as written resolves from this source file, as it did here; a path that only
    // the manifest directory explains is given whole.
    let include = if absolute {
        path.display().to_string()
    } else {
        name.value()
    };
    Some(File { include, sha256 })
}

/// Whether a text starts (after a byte-order mark, whitespace and comments) with a doctype or
/// an `<html>` element.
fn is_html_document(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    while let Some(after) = rest.strip_prefix("<!--") {
        match after.find("-->") {
            Some(end) => rest = after[end + 3..].trim_start(),
            None => return false,
        }
    }
    let head: String = rest
        .chars()
        .take(14)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// `impl View for TheStruct`: what `#[tool(ui = TheStruct)]` reads.
fn view_impl(attrs: &ItemAttrs, item: &syn::ItemStruct) -> TokenStream {
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

fn opt_str(v: Option<&LitStr>) -> TokenStream {
    match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// The registration: the HTML (embedded, or the function's glue) and the `ViewDef`.
fn expand(attrs: &ItemAttrs, item: &syn::ItemStruct, file: Option<&File>) -> TokenStream {
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
    let title = opt_str(attrs.title.as_ref());
    let description = match doc_text(&item.attrs) {
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
    let domain = opt_str(attrs.domain.as_ref());
    let prefers_border = match &attrs.prefers_border {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let glue = format_ident!("__SAKE_VIEW_{}", ident.unraw());
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, non_snake_case, dead_code, clippy::all, clippy::pedantic)]
        const #glue: () = {
            #html_items
            #sake::__private::inventory::submit! {
                #sake::__private::ViewDef {
                    uri: #uri,
                    name: #name,
                    title: #title,
                    description: #description,
                    html: #html,
                    csp: #csp,
                    permissions: &[#(#permissions),*],
                    domain: #domain,
                    prefers_border: #prefers_border,
                    location: #sake::__private::Location {
                        file: ::core::file!(),
                        line: ::core::line!(),
                        module: ::core::module_path!(),
                    },
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_documents() {
        for ok in [
            "<!DOCTYPE html><html></html>",
            "\u{feff}\n  <!doctype HTML>\n<p>",
            "<!-- a view -->\n<!DOCTYPE html>",
            "<html lang=\"en\">",
        ] {
            assert!(is_html_document(ok), "{ok:?}");
        }
        for not in [
            "",
            "hello",
            "<div>fragment</div>",
            "<!-- unclosed <!DOCTYPE html>",
            "{\"json\": 1}",
        ] {
            assert!(!is_html_document(not), "{not:?}");
        }
    }
}
