//! A typed view of an annotated item: a function's parameters sorted into arguments and the
//! `Context`, its doc comments, its return type; a view's struct and its HTML. The original
//! syn nodes are kept for spans.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use crate::attr::{self, ArgAttrs, ItemAttrs, Kind};
use crate::ctxt::Ctxt;
use crate::{fallback, view};

/// What an attribute is on: the function of a `#[tool]`, `#[prompt]` or `#[resource]`, or
/// the unit struct that names a `#[view]`.
pub(crate) enum Item {
    Tool(Func),
    Prompt(Func),
    Resource(Func),
    View(view::View),
}

impl Item {
    /// The item `kind` goes on, typed; on another kind of item, the error to emit in its
    /// place (with the item unchanged).
    pub fn parse(
        cx: &Ctxt,
        kind: Kind,
        attrs: &ItemAttrs,
        input: TokenStream,
    ) -> Result<Item, TokenStream> {
        let wrong = |_| fallback::wrong_item(kind, input.clone());
        let function = |typed: fn(Func) -> Item| {
            let item = syn::parse2(input.clone()).map_err(wrong)?;
            Ok(typed(Func::from_syn(cx, item)))
        };
        match kind {
            Kind::Tool => function(Item::Tool),
            Kind::Prompt => function(Item::Prompt),
            Kind::Resource => function(Item::Resource),
            Kind::View => {
                let item = syn::parse2(input.clone()).map_err(wrong)?;
                Ok(Item::View(view::View::from_syn(cx, attrs, item)))
            }
        }
    }

    /// What is emitted in every case, with the glue or with the errors: the function as it
    /// will be (parameter attributes consumed); a view's struct and its `View` impl, so that
    /// the tools naming it report nothing more.
    pub fn emitted(&self, attrs: &ItemAttrs) -> TokenStream {
        match self {
            Item::Tool(f) | Item::Prompt(f) | Item::Resource(f) => {
                let item = &f.item;
                quote!(#item)
            }
            Item::View(v) => v.emitted(attrs),
        }
    }
}

pub(crate) enum ParamKind {
    /// An argument the client sends.
    Argument,
    /// The request's `Context`.
    Context,
    /// `State<T>`: application state registered on the server builder. Any type whose last
    /// path segment is `State<..>` with one type argument; the generated code checks it is
    /// `sake::State` (`#[arg]` makes such a parameter an argument instead).
    State,
    /// The caller's `Principal` (feature `auth`): `Principal` (the function runs only for a
    /// signed-in caller) or `Option<Principal>`. By the last path segment; the generated code
    /// checks it is `sake::auth::Principal` (`#[arg]` makes such a parameter an argument).
    Principal {
        /// `Option<Principal>`: anonymous callers too.
        optional: bool,
    },
}

pub(crate) struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub kind: ParamKind,
    /// `#[doc]` attributes: the argument's description.
    pub docs: Vec<Attribute>,
    /// `#[serde]` and `#[schemars]` attributes, forwarded to the argument struct.
    pub forwarded: Vec<Attribute>,
    /// `#[arg(header = "...")]`.
    pub header: Option<syn::LitStr>,
    /// Whether `forwarded` changes how the type is deserialized or described (a default, a
    /// `deserialize_with`…): the argument struct then names the type itself, and the derives
    /// check it, instead of checking it against `ToolArgument` (see expand.rs).
    pub custom: bool,
}

pub(crate) struct Func {
    /// The function as it will be emitted: parameter attributes the macro consumed removed.
    pub item: ItemFn,
    pub params: Vec<Param>,
    pub description: Option<String>,
    pub ret: Type,
}

/// The text of `///` comments: lines joined with `\n`, one leading space per line removed.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(l) = &nv.value
            && let syn::Lit::Str(s) = &l.lit
        {
            let v = s.value();
            for line in v.lines() {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    let text = lines.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Whether `#[serde]`/`#[schemars]` attributes do more than name the argument (`rename`,
/// `alias`, `flatten`) or add to its schema: anything else may require more of the type, or
/// less, than `DeserializeOwned + JsonSchema`. An attribute that does not parse counts as custom.
fn is_custom(forwarded: &[Attribute]) -> bool {
    forwarded.iter().any(|attr| {
        let serde = attr.path().is_ident("serde");
        let syn::Meta::List(list) = &attr.meta else {
            return true;
        };
        let mut custom = false;
        let parsed = list.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            custom |= if serde {
                !matches!(key.as_str(), "rename" | "alias" | "flatten")
            } else {
                matches!(key.as_str(), "with" | "schema_with" | "bound" | "crate")
            };
            if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<proc_macro2::TokenStream>()?;
            }
            Ok(())
        });
        custom || parsed.is_err()
    })
}

fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == name && s.arguments.is_none()),
        _ => false,
    }
}

/// `Principal` or `Option<Principal>` (by the last segments): `Some(optional)`.
fn principal_kind(ty: &Type) -> Option<bool> {
    if last_segment_is(ty, "Principal") {
        return Some(false);
    }
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            syn::GenericArgument::Type(inner) if last_segment_is(inner, "Principal") => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// `State<T>` (by its last segment; the generated code checks it is `sake::State`).
fn is_state(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    if p.qself.is_some() {
        return false;
    }
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    last.ident == "State"
        && matches!(
            &last.arguments,
            syn::PathArguments::AngleBracketed(args)
                if args.args.len() == 1 && matches!(args.args[0], syn::GenericArgument::Type(_))
        )
}

/// The parameter's name, if it is a plain name (`x` or `mut x`) rather than a pattern.
pub(crate) fn plain_name(pat: &Pat) -> Option<Ident> {
    match pat {
        Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => Some(pi.ident.clone()),
        _ => None,
    }
}

pub(crate) fn contains_impl_trait(ty: &Type) -> bool {
    let s = quote!(#ty).to_string();
    s.starts_with("impl ") || s.contains("< impl ") || s.contains(", impl ")
}

impl Func {
    /// Sorts the parameters and consumes the parameter attributes the macro owns (`#[arg]`,
    /// `#[serde]`, `#[schemars]`, doc comments). Only `#[arg]`'s form is checked here: every
    /// rule about the signature is in `valid.rs`. A `self` receiver or a pattern parameter
    /// has no name to be an argument by and gets no `Param`; `valid.rs` reports it from
    /// `item.sig`.
    pub fn from_syn(cx: &Ctxt, mut item: ItemFn) -> Func {
        let ret = match &item.sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let mut params = Vec::new();
        for input in item.sig.inputs.iter_mut() {
            let FnArg::Typed(pt) = input else { continue };
            // Sort the parameter's attributes: ours are consumed, Rust's stay.
            let mut docs = Vec::new();
            let mut forwarded = Vec::new();
            let mut arg_attrs = ArgAttrs::default();
            let mut kept = Vec::new();
            for a in pt.attrs.drain(..) {
                if a.path().is_ident("doc") {
                    docs.push(a);
                } else if a.path().is_ident("serde") || a.path().is_ident("schemars") {
                    forwarded.push(a);
                } else if a.path().is_ident("arg") {
                    attr::parse_arg_attr(cx, &a, &mut arg_attrs);
                } else {
                    kept.push(a);
                }
            }
            pt.attrs = kept;
            if arg_attrs.sensitive {
                // A secret: JSON Schema's `writeOnly`, which the audit trail reads.
                forwarded.push(syn::parse_quote!(#[schemars(extend("writeOnly" = true))]));
            }
            let Some(ident) = plain_name(&pt.pat) else {
                continue;
            };
            let ty = (*pt.ty).clone();
            let kind = if !arg_attrs.force && last_segment_is(&ty, "Context") {
                ParamKind::Context
            } else if !arg_attrs.force && is_state(&ty) {
                ParamKind::State
            } else if let Some(optional) = principal_kind(&ty).filter(|_| !arg_attrs.force) {
                ParamKind::Principal { optional }
            } else {
                ParamKind::Argument
            };
            let custom = matches!(kind, ParamKind::Argument) && is_custom(&forwarded);
            params.push(Param {
                ident,
                ty,
                kind,
                docs,
                forwarded,
                header: arg_attrs.header,
                custom,
            });
        }
        let description = doc_text(&item.attrs);
        Func {
            item,
            params,
            description,
            ret,
        }
    }

    pub fn arguments(&self) -> impl Iterator<Item = &Param> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Argument))
    }

    pub fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }

    pub fn ident(&self) -> &Ident {
        &self.item.sig.ident
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom(attrs: &[&str]) -> bool {
        let attrs: Vec<Attribute> = attrs
            .iter()
            .map(|a| {
                let tokens: proc_macro2::TokenStream = a.parse().unwrap();
                syn::parse_quote!(#tokens)
            })
            .collect();
        is_custom(&attrs)
    }

    #[test]
    fn naming_attributes_are_not_custom() {
        assert!(!custom(&[]));
        assert!(!custom(&[r#"#[serde(rename = "type")]"#]));
        assert!(!custom(&[
            r#"#[serde(rename(deserialize = "t"), alias = "u")]"#
        ]));
        assert!(!custom(&["#[serde(flatten)]"]));
        assert!(!custom(&[r#"#[schemars(extend("format" = "date"))]"#]));
        assert!(!custom(&["#[schemars(range(min = 1))]"]));
    }

    #[test]
    fn attributes_that_change_the_requirements_are_custom() {
        assert!(custom(&["#[serde(default)]"]));
        assert!(custom(&[r#"#[serde(default = "f")]"#]));
        assert!(custom(&[r#"#[serde(deserialize_with = "f")]"#]));
        assert!(custom(&[r#"#[serde(with = "m")]"#]));
        assert!(custom(&[r#"#[schemars(with = "f64")]"#]));
        assert!(custom(&[r#"#[schemars(schema_with = "f")]"#]));
        assert!(custom(&["#[serde = 1]"]));
    }

    fn state(ty: &str) -> bool {
        is_state(&syn::parse_str::<Type>(ty).unwrap())
    }

    #[test]
    fn a_type_named_state_with_one_type_argument_is_state() {
        assert!(state("State<Db>"));
        assert!(state("sake::State<Db>"));
        assert!(state("State<Arc<Pool>>"));
        // Not sake's, but named like it: the generated code refuses it with a clear error.
        assert!(state("axum::extract::State<Db>"));
    }

    #[test]
    fn other_types_are_arguments() {
        assert!(!state("State"));
        assert!(!state("State<A, B>"));
        assert!(!state("State<'static>"));
        assert!(!state("AppState<Db>"));
        assert!(!state("<T as Trait>::State<Db>"));
        assert!(!state("&State<Db>"));
        assert!(!state("Option<State<Db>>"));
    }
}
