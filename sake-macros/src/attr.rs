//! Parsing the options of `#[tool(...)]`, `#[prompt(...)]`, `#[resource(...)]` and the
//! per-parameter `#[arg(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprArray, Lit, LitBool, LitStr, Path};

use crate::ctxt::Ctxt;

/// Which macro is being expanded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    pub fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "#[tool]",
            Kind::Prompt => "#[prompt]",
            Kind::Resource => "#[resource]",
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &[
                "name",
                "title",
                "annotations",
                "icons",
                "icon",
                "requires",
                "input_schema",
            ],
            Kind::Prompt => &["name", "title", "icons", "icon", "complete"],
            Kind::Resource => &[
                "uri",
                "name",
                "title",
                "mime_type",
                "icons",
                "icon",
                "complete",
            ],
        }
    }
}

/// An icon.
pub(crate) struct Icon {
    pub src: LitStr,
    pub mime_type: Option<LitStr>,
    pub sizes: Vec<LitStr>,
    pub theme: Option<LitStr>,
}

/// `annotations(...)`.
#[derive(Default)]
pub(crate) struct Hints {
    pub title: Option<LitStr>,
    pub read_only: Option<LitBool>,
    pub destructive: Option<LitBool>,
    pub idempotent: Option<LitBool>,
    pub open_world: Option<LitBool>,
}

/// Everything the item attribute can say.
#[derive(Default)]
pub(crate) struct ItemAttrs {
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub hints: Hints,
    pub icons: Vec<Icon>,
    pub uri: Option<LitStr>,
    pub mime_type: Option<LitStr>,
    pub complete: Option<Path>,
    /// `input_schema = path`: a function returning the input schema, served verbatim.
    pub input_schema: Option<Path>,
    /// `requires(sampling, elicitation, roots, sampling_tools, url_elicitation)`, as the
    /// runtime's capability names.
    pub requires: Vec<(String, Span)>,
}

fn set_once<T>(cx: &Ctxt, slot: &mut Option<T>, value: T, key: &syn::Path, what: &str) {
    if slot.is_some() {
        cx.error_spanned_by(key, format!("duplicate option `{what}`: give it once"));
    } else {
        *slot = Some(value);
    }
}

fn key_name(path: &syn::Path) -> String {
    path.get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string().replace(' ', ""))
}

/// Parses the tokens inside `#[tool(...)]` and friends, reporting every problem to `cx`.
pub(crate) fn parse_item_attrs(cx: &Ctxt, kind: Kind, tokens: TokenStream) -> ItemAttrs {
    let mut attrs = ItemAttrs::default();
    let mut seen_icons = false;
    let parser = syn::meta::parser(|meta| {
        let key = key_name(&meta.path);
        if !kind.keys().contains(&key.as_str()) {
            return Err(meta.error(format!(
                "unknown {} option `{key}`; expected one of: {}",
                kind.attr(),
                kind.keys().join(", ")
            )));
        }
        match key.as_str() {
            "name" => {
                let v: LitStr = meta.value()?.parse()?;
                set_once(cx, &mut attrs.name, v, &meta.path, "name");
            }
            "title" => {
                let v: LitStr = meta.value()?.parse()?;
                set_once(cx, &mut attrs.title, v, &meta.path, "title");
            }
            "uri" => {
                let v: LitStr = meta.value()?.parse()?;
                set_once(cx, &mut attrs.uri, v, &meta.path, "uri");
            }
            "mime_type" => {
                let v: LitStr = meta.value()?.parse()?;
                set_once(cx, &mut attrs.mime_type, v, &meta.path, "mime_type");
            }
            "complete" => {
                let v: Path = meta.value()?.parse()?;
                set_once(cx, &mut attrs.complete, v, &meta.path, "complete");
            }
            "input_schema" => {
                let v: Path = meta.value()?.parse()?;
                set_once(cx, &mut attrs.input_schema, v, &meta.path, "input_schema");
            }
            "annotations" => parse_hints(cx, &meta, &mut attrs.hints)?,
            "icons" => {
                if seen_icons {
                    cx.error_spanned_by(&meta.path, "duplicate option `icons`: give it once");
                }
                seen_icons = true;
                let list: ExprArray = meta.value()?.parse()?;
                for e in list.elems {
                    match lit_str(&e) {
                        Some(src) => attrs.icons.push(Icon {
                            src,
                            mime_type: None,
                            sizes: Vec::new(),
                            theme: None,
                        }),
                        None => cx.error_spanned_by(
                            &e,
                            "an icon is a string literal: its https: or data: URI",
                        ),
                    }
                }
            }
            "icon" => attrs.icons.push(parse_icon(cx, &meta)?),
            "requires" => meta.parse_nested_meta(|inner| {
                let key = key_name(&inner.path);
                let capability = match key.as_str() {
                    "sampling" => "sampling",
                    "sampling_tools" => "sampling.tools",
                    "elicitation" => "elicitation",
                    "url_elicitation" => "elicitation.url",
                    "roots" => "roots",
                    _ => {
                        return Err(inner.error(format!(
                            "unknown client capability `{key}`; expected one of: sampling, sampling_tools, elicitation, url_elicitation, roots"
                        )));
                    }
                };
                if attrs.requires.iter().any(|(c, _)| c == capability) {
                    cx.error_spanned_by(&inner.path, format!("`{key}` is required twice"));
                }
                attrs.requires.push((capability.to_owned(), inner.path.segments[0].ident.span()));
                Ok(())
            })?,
            _ => unreachable!("keys() lists every handled key"),
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        cx.push(e);
    }
    attrs
}

fn lit_str(e: &Expr) -> Option<LitStr> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn parse_hints(cx: &Ctxt, meta: &ParseNestedMeta<'_>, hints: &mut Hints) -> syn::Result<()> {
    const KEYS: &[&str] = &[
        "title",
        "read_only",
        "destructive",
        "idempotent",
        "open_world",
    ];
    meta.parse_nested_meta(|inner| {
        let key = key_name(&inner.path);
        let flag = |inner: &ParseNestedMeta<'_>| -> syn::Result<LitBool> {
            if inner.input.peek(syn::Token![=]) {
                inner.value()?.parse::<LitBool>()
            } else {
                Ok(LitBool::new(true, inner.path.segments[0].ident.span()))
            }
        };
        match key.as_str() {
            "title" => {
                let v: LitStr = inner.value()?.parse()?;
                set_once(cx, &mut hints.title, v, &inner.path, "title");
            }
            "read_only" => {
                let v = flag(&inner)?;
                set_once(cx, &mut hints.read_only, v, &inner.path, "read_only");
            }
            "destructive" => {
                let v = flag(&inner)?;
                set_once(cx, &mut hints.destructive, v, &inner.path, "destructive");
            }
            "idempotent" => {
                let v = flag(&inner)?;
                set_once(cx, &mut hints.idempotent, v, &inner.path, "idempotent");
            }
            "open_world" => {
                let v = flag(&inner)?;
                set_once(cx, &mut hints.open_world, v, &inner.path, "open_world");
            }
            _ => {
                return Err(inner.error(format!(
                    "unknown annotation `{key}`; expected one of: {}",
                    KEYS.join(", ")
                )));
            }
        }
        Ok(())
    })
}

fn parse_icon(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Icon> {
    let mut src = None;
    let mut mime_type = None;
    let mut sizes: Option<Vec<LitStr>> = None;
    let mut theme = None;
    meta.parse_nested_meta(|inner| {
        let key = key_name(&inner.path);
        match key.as_str() {
            "src" => {
                let v: LitStr = inner.value()?.parse()?;
                set_once(cx, &mut src, v, &inner.path, "src");
            }
            "mime_type" => {
                let v: LitStr = inner.value()?.parse()?;
                set_once(cx, &mut mime_type, v, &inner.path, "mime_type");
            }
            "theme" => {
                let v: LitStr = inner.value()?.parse()?;
                if v.value() != "light" && v.value() != "dark" {
                    cx.error_spanned_by(&v, "an icon's theme is \"light\" or \"dark\"");
                }
                set_once(cx, &mut theme, v, &inner.path, "theme");
            }
            "sizes" => {
                let list: ExprArray = inner.value()?.parse()?;
                let mut out = Vec::new();
                for e in list.elems {
                    match lit_str(&e) {
                        Some(s) => out.push(s),
                        None => cx.error_spanned_by(
                            &e,
                            "a size is a string such as \"48x48\" or \"any\"",
                        ),
                    }
                }
                set_once(cx, &mut sizes, out, &inner.path, "sizes");
            }
            _ => {
                return Err(inner.error(format!(
                    "unknown icon option `{key}`; expected one of: src, mime_type, sizes, theme"
                )));
            }
        }
        Ok(())
    })?;
    match src {
        Some(src) => Ok(Icon {
            src,
            mime_type,
            sizes: sizes.unwrap_or_default(),
            theme,
        }),
        None => Err(meta.error("an icon needs `src = \"https://…\"`")),
    }
}

/// `#[arg(...)]` on a parameter.
#[derive(Default)]
pub(crate) struct ArgAttrs {
    /// `#[arg]` alone: force the parameter to be an argument even if its type is named
    /// `Context` or `State`.
    pub force: bool,
    /// `#[arg(header = "Region")]`: mirror the argument in the `Mcp-Param-Region` header.
    pub header: Option<LitStr>,
}

/// An RFC 9110 token character.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

pub(crate) fn parse_arg_attr(cx: &Ctxt, attr: &syn::Attribute, out: &mut ArgAttrs) {
    match &attr.meta {
        syn::Meta::Path(_) => out.force = true,
        syn::Meta::List(list) => {
            out.force = true;
            let res = list.parse_nested_meta(|meta| {
                let key = key_name(&meta.path);
                match key.as_str() {
                    "header" => {
                        let v: LitStr = meta.value()?.parse()?;
                        let name = v.value();
                        if name.is_empty() || !name.chars().all(is_tchar) {
                            cx.error_spanned_by(
                                &v,
                                format!("{name:?} is not a valid header name: use letters, digits and !#$%&'*+-.^_`|~ (it becomes `Mcp-Param-{name}`)"),
                            );
                        }
                        set_once(cx, &mut out.header, v, &meta.path, "header");
                        Ok(())
                    }
                    _ => Err(meta.error(format!("unknown #[arg] option `{key}`; expected `header = \"Name\"`"))),
                }
            });
            if let Err(e) = res {
                cx.push(e);
            }
        }
        syn::Meta::NameValue(nv) => {
            cx.error_spanned_by(nv, "write #[arg] or #[arg(header = \"Name\")]")
        }
    }
}
