//! The procedural macros of [sake](https://docs.rs/sake-mcp): `#[tool]`, `#[prompt]`,
//! `#[resource]` and `#[view]`. Use them through the `sake` crate.
//!
//! Each macro keeps the function as written (minus the parameter attributes it consumes) and
//! adds, in an anonymous `const` block, an argument struct, glue functions, and one
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

/// Parse, validate, then expand or fall back.
///
/// Parsing (`attr`, `ast`) and validation (`valid`) record every error they find and carry
/// on; validation runs whatever parsing found. With no error the glue is generated
/// (`expand`); otherwise the function is emitted as written, with every error (`fallback`).
fn run(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    let item: syn::ItemFn = match syn::parse(input.clone()) {
        Ok(f) => f,
        Err(_) => return fallback::not_a_function(kind.attr(), input.into()).into(),
    };
    let cx = Ctxt::default();
    let attrs = attr::parse_item_attrs(&cx, kind, args.into());
    let func = ast::Func::from_syn(&cx, item);
    valid::check(&cx, kind, &attrs, &func);
    match cx.check() {
        Ok(()) => {
            let generated = match kind {
                Kind::Tool => expand::tool(&attrs, &func),
                Kind::Prompt => expand::prompt(&attrs, &func),
                Kind::Resource => expand::resource(&attrs, &func),
                // `#[view]` is expanded by `view::run`, never here.
                Kind::View => quote!(),
            };
            let item = &func.item;
            quote!(#item #generated).into()
        }
        Err(errors) => fallback::expand(&func.item, errors).into(),
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
    view::run(args.into(), input.into()).into()
}
