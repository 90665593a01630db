//! The procedural macros of [sake](https://docs.rs/sake-mcp): `#[tool]`, `#[prompt]`,
//! `#[resource]`, `#[view]` and `skills!`. Use them through the `sake` crate.
//!
//! Each attribute keeps the item as written (minus the parameter attributes it consumes) and
//! adds, in a named `const` block, the glue (an argument struct, glue functions) and one
//! `inventory::submit!` of a descriptor. All protocol behaviour lives in the runtime.

mod ast;
mod attr;
mod ctxt;
mod expand;
mod fallback;
mod krate;
mod skills;
mod valid;
mod view;

use proc_macro::TokenStream;
use quote::quote;

use crate::attr::Kind;
use crate::ctxt::Ctxt;

/// Parse, validate, then expand or fall back: one pipeline for every attribute.
///
/// Parsing (`attr`, `ast`) and validation (`valid`) record every error they find and carry
/// on; validation runs whatever parsing found. With no error the glue is generated
/// (`expand`); otherwise the item is emitted as written, with every error (`fallback`).
fn run(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    pipeline(kind, args.into(), input.into()).into()
}

fn pipeline(
    kind: Kind,
    args: proc_macro2::TokenStream,
    input: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let cx = Ctxt::default();
    let attrs = attr::parse_item_attrs(&cx, kind, args);
    let item = match ast::Item::parse(&cx, kind, &attrs, input) {
        Ok(item) => item,
        Err(wrong) => return wrong,
    };
    valid::check(&cx, &attrs, &item);
    let emitted = item.emitted(&attrs);
    match cx.check() {
        Ok(()) => {
            let glue = expand::item(&attrs, &item);
            quote!(#emitted #glue)
        }
        Err(errors) => fallback::expand(emitted, errors),
    }
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

/// Serves a directory of Agent Skills (the MCP skills extension): `sake::skills!("skills");`
/// at module level, the path relative to the file that invokes it (as `include_bytes!`).
///
/// Every directory with a `SKILL.md` is a skill at `skill://<its path>`; every file is
/// embedded, its digest and size computed, and every frontmatter checked at compile time
/// (`name` equal to the directory, the naming rules, a `description`, the 512-file and 16 MiB
/// limits), with an error naming the file. `scopes("...")` makes them visible and readable
/// only to callers with those OAuth scopes. See docs/skills.md.
#[proc_macro]
pub fn skills(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as skills::Input);
    // Relative to the invoking file, as `include_bytes!`; without one, to the crate's root.
    let base = proc_macro::Span::call_site()
        .local_file()
        .and_then(|f| f.parent().map(std::path::Path::to_path_buf))
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(Into::into))
        .unwrap_or_default();
    skills::expand(input, &base).into()
}

/// Declares an MCP Apps view (a `ui://` resource of type `text/html;profile=mcp-app`) on a
/// unit struct that names it: `#[view(uri = "ui://weather/card", html = "card.html")] struct
/// Card;`, then `#[tool(ui = Card)]` on the tools it renders. The HTML is a file embedded at
/// compile time (relative to the source file, checked here) or a function (`html = f`). See
/// docs/apps.md for every option.
#[proc_macro_attribute]
pub fn view(args: TokenStream, input: TokenStream) -> TokenStream {
    run(Kind::View, args, input)
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    use super::*;

    fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> String {
        pipeline(kind, args, item).to_string()
    }

    /// Every attribute goes through the one pipeline, and its glue has the one shape: the item,
    /// then a named `const` holding one `inventory::submit!` of the descriptor.
    #[test]
    fn every_attribute_expands_to_the_one_glue_template() {
        let cases = [
            (
                Kind::Tool,
                quote!(),
                quote!(
                    #[doc = " Adds."]
                    fn add(a: i64) -> i64 {
                        a
                    }
                ),
                "const __SAKE_add",
                "ToolDef",
            ),
            (
                Kind::Prompt,
                quote!(),
                quote!(
                    #[doc = " Greets."]
                    fn greet(name: String) -> String {
                        name
                    }
                ),
                "const __SAKE_greet",
                "PromptDef",
            ),
            (
                Kind::Resource,
                quote!(uri = "doc://{name}"),
                quote!(
                    fn doc(name: String) -> String {
                        name
                    }
                ),
                "const __SAKE_doc",
                "ResourceDef",
            ),
            (
                Kind::View,
                quote!(uri = "ui://weather/card", html = render),
                quote!(
                    struct Card;
                ),
                "const __SAKE_VIEW_Card",
                "ViewDef",
            ),
        ];
        let allow = "# [doc (hidden)] # [allow (non_camel_case_types , non_snake_case , non_upper_case_globals , dead_code , unused , clippy :: all , clippy :: pedantic)]";
        for (kind, args, item, name, def) in cases {
            let out = expand(kind, args, item);
            assert!(!out.contains("compile_error"), "{out}");
            assert_eq!(out.matches("inventory :: submit !").count(), 1, "{out}");
            assert!(out.contains(&format!("{allow} {name} : () = {{")), "{out}");
            assert!(out.contains(&format!(":: __private :: {def} {{")), "{out}");
        }
    }

    /// An attribute on another kind of item says what it goes on, and emits the item as it is.
    #[test]
    fn an_attribute_on_the_wrong_item_says_what_it_goes_on() {
        let on_struct = expand(
            Kind::Tool,
            quote!(),
            quote!(
                struct Card;
            ),
        );
        assert!(
            on_struct.contains("#[tool] goes on a function (`fn` or `async fn`), not on a struct"),
            "{on_struct}"
        );
        assert!(on_struct.ends_with("struct Card ;"), "{on_struct}");
        let on_fn = expand(
            Kind::View,
            quote!(uri = "ui://a/b"),
            quote!(
                fn card() {}
            ),
        );
        assert!(
            on_fn.contains("#[view] goes on a unit struct that names the view (`struct MyView;`), not on a function"),
            "{on_fn}"
        );
        assert!(!on_fn.contains("ViewDef"), "{on_fn}");
    }

    /// With errors, a view's struct and its `View` impl are still emitted (so the tools that
    /// name it report nothing more), and no glue.
    #[test]
    fn a_view_with_errors_keeps_its_struct_and_impl() {
        let out = expand(
            Kind::View,
            quote!(uri = "ui://weather/card"),
            quote!(
                struct Card;
            ),
        );
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("struct Card ;"), "{out}");
        assert!(
            out.contains(":: __private :: View for Card { const URI : & 'static str = \"ui://weather/card\" ; }"),
            "{out}"
        );
        assert!(!out.contains("inventory"), "{out}");
    }
}
