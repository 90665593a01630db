//! Parsing the options of `#[tool(...)]`, `#[prompt(...)]`, `#[resource(...)]` and the
//! per-parameter `#[arg(...)]`.
//!
//! Parsing records what each option says and checks only its form (a string where a string
//! goes, a list where a list goes, each option once). A bad option is recorded in the `Ctxt`
//! and parsing goes on with the next one, so that every mistake of an attribute is reported
//! at once; whether the values make sense is `valid.rs`'s business.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, LitBool, LitStr, Path, Token};

use crate::ctxt::Ctxt;

/// Which macro is being expanded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
    View,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::View];

    pub fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "#[tool]",
            Kind::Prompt => "#[prompt]",
            Kind::Resource => "#[resource]",
            Kind::View => "#[view]",
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
                "scopes",
                "task",
                "ui",
                "visibility",
                "layer",
            ],
            Kind::Prompt => &["name", "title", "icons", "icon", "complete", "scopes"],
            Kind::Resource => &[
                "uri",
                "name",
                "title",
                "mime_type",
                "icons",
                "icon",
                "complete",
                "scopes",
            ],
            Kind::View => &[
                "uri",
                "html",
                "name",
                "title",
                "csp",
                "permissions",
                "domain",
                "prefers_border",
            ],
        }
    }

    /// The message for an option this macro does not take.
    fn unknown_option(self, key: &str) -> String {
        let expected = self.keys().join(", ");
        let owners: Vec<&str> = Kind::ALL
            .iter()
            .filter(|k| k.keys().contains(&key))
            .map(|k| k.attr())
            .collect();
        if owners.is_empty() {
            format!(
                "unknown {} option `{key}`; expected one of: {expected}",
                self.attr()
            )
        } else {
            format!(
                "`{key}` is an option of {}, not of {}; {} takes: {expected}",
                owners.join(" and "),
                self.attr(),
                self.attr()
            )
        }
    }
}

/// An icon: `icon(src = ..., ...)`, or one entry of `icons = [...]`.
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

/// One entry of `requires(...)`.
pub(crate) struct Capability {
    /// The word as written, for errors.
    pub key: Ident,
    /// The runtime's name for it: `sampling`, `sampling.tools`, `elicitation`,
    /// `elicitation.url`, `roots`.
    pub name: &'static str,
}

/// `scopes("files:read", ...)`.
pub(crate) struct Scopes {
    /// `scopes(...)` as written, for errors about the list as a whole.
    pub tokens: TokenStream,
    pub list: Vec<LitStr>,
}

/// `html = "file.html"` or `html = path::to::function` of a view.
pub(crate) enum Html {
    File(LitStr),
    Function(Path),
}

/// `csp(...)` of a view: each list of origins, as written.
#[derive(Default)]
pub(crate) struct Csp {
    /// `csp(...)` as written, for errors about it as a whole.
    pub tokens: TokenStream,
    pub connect_domains: Option<Vec<LitStr>>,
    pub resource_domains: Option<Vec<LitStr>>,
    pub frame_domains: Option<Vec<LitStr>>,
    pub base_uri_domains: Option<Vec<LitStr>>,
}

/// A bare word of a list (`permissions(camera)`, `visibility(app)`): the word as written, and
/// its name on the wire.
pub(crate) struct Word {
    pub key: Ident,
    pub wire: &'static str,
}

/// A list of bare words, and the list as written (`visibility(app)`).
pub(crate) struct Words {
    pub tokens: TokenStream,
    pub list: Vec<Word>,
}

/// `ui = "ui://…"` or `ui = ViewStruct` of a tool.
pub(crate) enum UiLink {
    Uri(LitStr),
    View(Path),
}

/// Everything the item attribute can say.
#[derive(Default)]
pub(crate) struct ItemAttrs {
    /// The attribute's tokens, for errors about the attribute as a whole.
    pub tokens: TokenStream,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub hints: Hints,
    pub icons: Vec<Icon>,
    pub uri: Option<LitStr>,
    pub mime_type: Option<LitStr>,
    pub complete: Option<Path>,
    /// `input_schema = path`: a function returning the input schema, served verbatim.
    pub input_schema: Option<Path>,
    /// `requires(sampling, elicitation, roots, sampling_tools, url_elicitation)`.
    pub requires: Vec<Capability>,
    /// `scopes(...)`: the OAuth scopes a caller needs.
    pub scopes: Option<Scopes>,
    /// `task = "forbidden" | "optional" | "required"`.
    pub task: Option<LitStr>,
    /// `ui = ...` of a tool: its view.
    pub ui: Option<UiLink>,
    /// `layer = expr` of a tool: a tower layer over its calls (`sake::middleware`).
    pub layer: Option<Expr>,
    /// `visibility(model, app)` of a tool.
    pub visibility: Option<Words>,
    /// `html = ...` of a view.
    pub html: Option<Html>,
    /// `csp(...)` of a view.
    pub csp: Option<Csp>,
    /// `permissions(...)` of a view.
    pub permissions: Option<Words>,
    /// `domain = "..."` of a view.
    pub domain: Option<LitStr>,
    /// `prefers_border` of a view.
    pub prefers_border: Option<LitBool>,
    /// Every option written, valid or not: a required option given with a bad value is
    /// reported once, for its value.
    pub given: Vec<String>,
}

impl ItemAttrs {
    /// Whether the option `key` was written.
    pub fn gave(&self, key: &str) -> bool {
        self.given.iter().any(|k| k == key)
    }
}

/// The words of `visibility(...)`: as written, and on the wire.
pub(crate) const VISIBILITY: [(&str, &str); 2] = [("model", "Model"), ("app", "App")];

/// The words of `permissions(...)`: as written, and on the wire.
pub(crate) const PERMISSIONS: [(&str, &str); 4] = [
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboard_write", "clipboardWrite"),
];

/// The values of `task = "..."`: the spelling, and the runtime's `TaskSupport` variant.
pub(crate) const TASK_SUPPORT: [(&str, &str); 3] = [
    ("forbidden", "Forbidden"),
    ("optional", "Optional"),
    ("required", "Required"),
];

/// How to write `task`.
pub(crate) const TASK_HELP: &str = "write `task = \"forbidden\"` (the default: never runs as a task), `task = \"optional\"` or `task = \"required\"`";

/// One option of a list: its key, and the input right after the key.
pub(crate) struct Opt<'a> {
    pub key: Ident,
    pub input: ParseStream<'a>,
}

/// Parses a comma-separated list of options, calling `each` on every one. An option `each`
/// refuses is recorded and skipped (up to the next top-level comma), and parsing goes on.
pub(crate) fn options(
    cx: &Ctxt,
    input: ParseStream<'_>,
    mut each: impl FnMut(Opt<'_>) -> syn::Result<()>,
) {
    while !input.is_empty() {
        if input.peek(Token![,]) {
            cx.push(input.error("expected an option before this `,`"));
        } else {
            match input.call(Ident::parse_any) {
                Ok(key) => match each(Opt { key, input }) {
                    Err(e) => {
                        cx.push(e);
                        skip_option(input);
                    }
                    Ok(()) if !input.is_empty() && !input.peek(Token![,]) => {
                        cx.push(input.error("expected `,`: separate options with commas"));
                        skip_option(input);
                    }
                    Ok(()) => {}
                },
                Err(_) => {
                    cx.push(input.error("expected the name of an option, such as `name`"));
                    skip_option(input);
                }
            }
        }
        if input.parse::<Option<Token![,]>>().is_err() {
            break;
        }
    }
}

/// Skips the rest of an option: everything up to the next top-level comma.
fn skip_option(input: ParseStream<'_>) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

/// A string literal, if `e` is one.
fn lit_str(e: &Expr) -> Option<LitStr> {
    match e {
        Expr::Lit(l) if l.attrs.is_empty() => match &l.lit {
            Lit::Str(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

impl Opt<'_> {
    fn name(&self) -> String {
        self.key.unraw().to_string()
    }

    /// `key = <expression>`; `form` is how the option is written, for the error when `=` is
    /// missing.
    fn value(&self, form: &str) -> syn::Result<Expr> {
        self.value_with(&format!("write `{form}`"))
    }

    /// `key = <expression>`; `help` says how to write it.
    fn value_with(&self, help: &str) -> syn::Result<Expr> {
        if !self.input.peek(Token![=]) {
            return Err(syn::Error::new(
                self.key.span(),
                format!("`{}` takes a value: {help}", self.name()),
            ));
        }
        self.input.parse::<Token![=]>()?;
        self.input.parse::<Expr>()
    }

    /// `key = "..."`; `example` is an example value, quotes included.
    fn string(&self, example: &str) -> syn::Result<LitStr> {
        self.string_with(&format!("write `{} = {example}`", self.name()))
    }

    /// `key = "..."`; `help` says how to write it.
    fn string_with(&self, help: &str) -> syn::Result<LitStr> {
        let value = self.value_with(help)?;
        lit_str(&value).ok_or_else(|| {
            syn::Error::new_spanned(
                &value,
                format!("`{}` takes a string literal: {help}", self.name()),
            )
        })
    }

    /// `key = path::to::function`.
    fn path(&self) -> syn::Result<Path> {
        let form = format!("{} = path::to::function", self.name());
        match self.value(&form)? {
            Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Ok(p.path),
            other => Err(syn::Error::new_spanned(
                other,
                format!(
                    "`{}` takes the path of a function: write `{form}`",
                    self.name()
                ),
            )),
        }
    }

    /// A bare `key` (true) or `key = true | false`.
    fn flag(&self) -> syn::Result<LitBool> {
        if !self.input.peek(Token![=]) {
            return Ok(LitBool::new(true, self.key.span()));
        }
        self.input.parse::<Token![=]>()?;
        let value: Expr = self.input.parse()?;
        if let Expr::Lit(l) = &value
            && let Lit::Bool(b) = &l.lit
        {
            return Ok(b.clone());
        }
        Err(syn::Error::new_spanned(
            value,
            format!("`{}` is a flag: write `{0}` or `{0} = false`", self.name()),
        ))
    }

    /// No value: a bare word, as in `requires(sampling)`.
    fn bare(&self, context: &str) -> syn::Result<()> {
        if self.input.is_empty() || self.input.peek(Token![,]) {
            Ok(())
        } else {
            Err(self.input.error(format!(
                "`{}` takes no value in {context}: write the bare word",
                self.name()
            )))
        }
    }

    /// `key(...)` holding options; returns `key(...)` as written, for errors about it.
    fn nested(
        &self,
        cx: &Ctxt,
        form: &str,
        each: impl FnMut(Opt<'_>) -> syn::Result<()>,
    ) -> syn::Result<TokenStream> {
        if !self.input.peek(syn::token::Paren) {
            return Err(syn::Error::new(self.key.span(), format!("write `{form}`")));
        }
        let content;
        let paren = syn::parenthesized!(content in self.input);
        options(cx, &content, each);
        let mut tokens = self.key.to_token_stream();
        paren.surround(&mut tokens, |_| {});
        Ok(tokens)
    }
}

/// Records `value` in `slot`, or an error at `key` if the option was given before.
fn set_once<T>(cx: &Ctxt, slot: &mut Option<T>, value: T, key: &Ident) {
    if slot.is_some() {
        cx.error_spanned_by(
            key,
            format!("duplicate option `{}`: give it once", key.unraw()),
        );
    } else {
        *slot = Some(value);
    }
}

/// Parses the tokens inside `#[tool(...)]` and friends, reporting every problem to `cx`.
pub(crate) fn parse_item_attrs(cx: &Ctxt, kind: Kind, tokens: TokenStream) -> ItemAttrs {
    let mut attrs = ItemAttrs {
        tokens: tokens.clone(),
        ..ItemAttrs::default()
    };
    let mut seen_icons = false;
    let mut given = Vec::new();
    let parser = |input: ParseStream<'_>| {
        options(cx, input, |opt| {
            let key = opt.name();
            given.push(key.clone());
            if !kind.keys().contains(&key.as_str()) {
                return Err(syn::Error::new(opt.key.span(), kind.unknown_option(&key)));
            }
            match key.as_str() {
                "name" => set_once(cx, &mut attrs.name, opt.string("\"...\"")?, &opt.key),
                "title" => set_once(cx, &mut attrs.title, opt.string("\"...\"")?, &opt.key),
                "uri" => set_once(cx, &mut attrs.uri, opt.string("\"scheme://…\"")?, &opt.key),
                "mime_type" => set_once(
                    cx,
                    &mut attrs.mime_type,
                    opt.string("\"text/plain\"")?,
                    &opt.key,
                ),
                "complete" => set_once(cx, &mut attrs.complete, opt.path()?, &opt.key),
                "input_schema" => set_once(cx, &mut attrs.input_schema, opt.path()?, &opt.key),
                "layer" => set_once(
                    cx,
                    &mut attrs.layer,
                    opt.value_with("write `layer = Timeout::new(Duration::from_secs(5))`, any tower layer of `sake::middleware`")?,
                    &opt.key,
                ),
                "task" => set_once(cx, &mut attrs.task, opt.string_with(TASK_HELP)?, &opt.key),
                "annotations" => parse_hints(cx, &opt, &mut attrs.hints)?,
                "icons" => {
                    if seen_icons {
                        cx.error_spanned_by(&opt.key, "duplicate option `icons`: give it once");
                    }
                    seen_icons = true;
                    parse_icons(cx, &opt, &mut attrs.icons)?;
                }
                "icon" => {
                    if let Some(icon) = parse_icon(cx, &opt)? {
                        attrs.icons.push(icon);
                    }
                }
                "requires" => parse_requires(cx, &opt, &mut attrs.requires)?,
                "scopes" => {
                    let scopes = parse_scopes(cx, &opt)?;
                    set_once(cx, &mut attrs.scopes, scopes, &opt.key);
                }
                "ui" => {
                    let ui = parse_ui(&opt)?;
                    set_once(cx, &mut attrs.ui, ui, &opt.key);
                }
                "visibility" => {
                    let words = parse_words(cx, &opt, "visibility(app)", &VISIBILITY)?;
                    set_once(cx, &mut attrs.visibility, words, &opt.key);
                }
                "html" => {
                    let html = parse_html(&opt)?;
                    set_once(cx, &mut attrs.html, html, &opt.key);
                }
                "csp" => {
                    let csp = parse_csp(cx, &opt)?;
                    set_once(cx, &mut attrs.csp, csp, &opt.key);
                }
                "permissions" => {
                    let words = parse_words(cx, &opt, "permissions(camera, …)", &PERMISSIONS)?;
                    set_once(cx, &mut attrs.permissions, words, &opt.key);
                }
                "domain" => set_once(
                    cx,
                    &mut attrs.domain,
                    opt.string("\"a904794854a047f6.claudemcpcontent.com\"")?,
                    &opt.key,
                ),
                "prefers_border" => set_once(cx, &mut attrs.prefers_border, opt.flag()?, &opt.key),
                _ => {
                    return Err(syn::Error::new(opt.key.span(), kind.unknown_option(&key)));
                }
            }
            Ok(())
        });
        Ok(())
    };
    if let Err(e) = parser.parse2(tokens) {
        cx.push(e);
    }
    attrs.given = given;
    attrs
}

fn parse_hints(cx: &Ctxt, opt: &Opt<'_>, hints: &mut Hints) -> syn::Result<()> {
    const KEYS: &str = "title, read_only, destructive, idempotent, open_world";
    opt.nested(cx, "annotations(read_only, …)", |inner| {
        let key = &inner.key;
        match inner.name().as_str() {
            "title" => set_once(cx, &mut hints.title, inner.string("\"...\"")?, key),
            "read_only" => set_once(cx, &mut hints.read_only, inner.flag()?, key),
            "destructive" => set_once(cx, &mut hints.destructive, inner.flag()?, key),
            "idempotent" => set_once(cx, &mut hints.idempotent, inner.flag()?, key),
            "open_world" => set_once(cx, &mut hints.open_world, inner.flag()?, key),
            other => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown annotation `{other}`; expected one of: {KEYS}"),
                ));
            }
        }
        Ok(())
    })?;
    Ok(())
}

/// `icons = ["https://…", …]`.
fn parse_icons(cx: &Ctxt, opt: &Opt<'_>, icons: &mut Vec<Icon>) -> syn::Result<()> {
    let form = "icons = [\"https://…\"]";
    let value = opt.value(form)?;
    let Expr::Array(list) = value else {
        return Err(syn::Error::new_spanned(
            value,
            format!("`icons` takes a list of URIs: write `{form}`"),
        ));
    };
    for e in list.elems {
        match lit_str(&e) {
            Some(src) => icons.push(Icon {
                src,
                mime_type: None,
                sizes: Vec::new(),
                theme: None,
            }),
            None => cx.error_spanned_by(&e, "an icon is a string literal: its https: or data: URI"),
        }
    }
    Ok(())
}

/// `icon(src = ..., mime_type = ..., sizes = [...], theme = ...)`; `None` when `src` is
/// missing (recorded).
fn parse_icon(cx: &Ctxt, opt: &Opt<'_>) -> syn::Result<Option<Icon>> {
    let mut src = None;
    let mut mime_type = None;
    let mut sizes: Option<Vec<LitStr>> = None;
    let mut theme = None;
    let written = opt.nested(cx, "icon(src = \"https://…\")", |inner| {
        let key = &inner.key;
        match inner.name().as_str() {
            "src" => set_once(cx, &mut src, inner.string("\"https://…\"")?, key),
            "mime_type" => set_once(cx, &mut mime_type, inner.string("\"image/png\"")?, key),
            "theme" => set_once(cx, &mut theme, inner.string("\"light\"")?, key),
            "sizes" => {
                let form = "sizes = [\"48x48\"]";
                let value = inner.value(form)?;
                let Expr::Array(list) = value else {
                    return Err(syn::Error::new_spanned(
                        value,
                        format!("`sizes` takes a list: write `{form}`"),
                    ));
                };
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
                set_once(cx, &mut sizes, out, key);
            }
            other => {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown icon option `{other}`; expected one of: src, mime_type, sizes, theme"
                    ),
                ));
            }
        }
        Ok(())
    })?;
    let Some(src) = src else {
        cx.error_spanned_by(written, "an icon needs `src = \"https://…\"`");
        return Ok(None);
    };
    Ok(Some(Icon {
        src,
        mime_type,
        sizes: sizes.unwrap_or_default(),
        theme,
    }))
}

/// `requires(sampling, ...)`.
fn parse_requires(cx: &Ctxt, opt: &Opt<'_>, out: &mut Vec<Capability>) -> syn::Result<()> {
    opt.nested(cx, "requires(sampling, …)", |inner| {
        let name = match inner.name().as_str() {
            "sampling" => "sampling",
            "sampling_tools" => "sampling.tools",
            "elicitation" => "elicitation",
            "url_elicitation" => "elicitation.url",
            "roots" => "roots",
            other => {
                return Err(syn::Error::new(
                    inner.key.span(),
                    format!(
                        "unknown client capability `{other}`; expected one of: sampling, sampling_tools, elicitation, url_elicitation, roots"
                    ),
                ));
            }
        };
        inner.bare("requires(...)")?;
        out.push(Capability {
            key: inner.key.clone(),
            name,
        });
        Ok(())
    })?;
    Ok(())
}

/// `ui = "ui://…"` or `ui = ViewStruct`.
fn parse_ui(opt: &Opt<'_>) -> syn::Result<UiLink> {
    let help = "write `ui = MyView` (a struct declared with #[view]) or `ui = \"ui://…\"`";
    let value = opt.value_with(help)?;
    if let Some(s) = lit_str(&value) {
        return Ok(UiLink::Uri(s));
    }
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Ok(UiLink::View(p.path)),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`ui` takes a view: {help}"),
        )),
    }
}

/// `html = "file.html"` or `html = path::to::function`.
fn parse_html(opt: &Opt<'_>) -> syn::Result<Html> {
    let help = "write `html = \"view.html\"` (a file next to this source file, embedded at compile time) or `html = path::to::function` (called on each read)";
    let value = opt.value_with(help)?;
    if let Some(s) = lit_str(&value) {
        return Ok(Html::File(s));
    }
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Ok(Html::Function(p.path)),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`html` takes a file name or a function: {help}"),
        )),
    }
}

/// A list of bare words from `known` (as written, on the wire): `visibility(app)`.
fn parse_words(
    cx: &Ctxt,
    opt: &Opt<'_>,
    form: &str,
    known: &[(&str, &'static str)],
) -> syn::Result<Words> {
    let mut list = Vec::new();
    let name = opt.name();
    let expected = known.iter().map(|(w, _)| *w).collect::<Vec<_>>().join(", ");
    let tokens = opt.nested(cx, form, |inner| {
        let word = inner.name();
        let Some((_, wire)) = known.iter().find(|(w, _)| *w == word) else {
            return Err(syn::Error::new(
                inner.key.span(),
                format!("unknown {name} `{word}`; expected one of: {expected}"),
            ));
        };
        inner.bare(&format!("{name}(...)"))?;
        list.push(Word {
            key: inner.key.clone(),
            wire,
        });
        Ok(())
    })?;
    Ok(Words { tokens, list })
}

/// `csp(connect_domains = [...], resource_domains = [...], frame_domains = [...],
/// base_uri_domains = [...])`.
fn parse_csp(cx: &Ctxt, opt: &Opt<'_>) -> syn::Result<Csp> {
    const KEYS: &str = "connect_domains, resource_domains, frame_domains, base_uri_domains";
    let mut csp = Csp::default();
    let tokens = opt.nested(cx, "csp(connect_domains = [\"https://…\"])", |inner| {
        let key = &inner.key;
        let slot = match inner.name().as_str() {
            "connect_domains" => &mut csp.connect_domains,
            "resource_domains" => &mut csp.resource_domains,
            "frame_domains" => &mut csp.frame_domains,
            "base_uri_domains" => &mut csp.base_uri_domains,
            other => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown csp list `{other}`; expected one of: {KEYS}"),
                ));
            }
        };
        let form = format!("{} = [\"https://api.example.com\"]", inner.name());
        let value = inner.value(&form)?;
        let Expr::Array(list) = value else {
            return Err(syn::Error::new_spanned(
                value,
                format!("`{}` takes a list of origins: write `{form}`", inner.name()),
            ));
        };
        let mut origins = Vec::new();
        for e in list.elems {
            match lit_str(&e) {
                Some(s) => origins.push(s),
                None => cx.error_spanned_by(
                    &e,
                    "an origin is a string literal such as \"https://api.example.com\"",
                ),
            }
        }
        set_once(cx, slot, origins, key);
        Ok(())
    })?;
    csp.tokens = tokens;
    Ok(csp)
}

/// `scopes("files:read", "files:write")`.
fn parse_scopes(cx: &Ctxt, opt: &Opt<'_>) -> syn::Result<Scopes> {
    let form = "scopes(\"files:read\", \"files:write\")";
    if !opt.input.peek(syn::token::Paren) {
        return Err(syn::Error::new(opt.key.span(), format!("write `{form}`")));
    }
    let content;
    let paren = syn::parenthesized!(content in opt.input);
    let elems = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
    let mut list = Vec::new();
    for e in &elems {
        match lit_str(e) {
            Some(s) => list.push(s),
            None => cx.error_spanned_by(e, format!("a scope is a string literal: write `{form}`")),
        }
    }
    let mut tokens = opt.key.to_token_stream();
    paren.surround(&mut tokens, |t| elems.to_tokens(t));
    Ok(Scopes { tokens, list })
}

/// `#[arg(...)]` on a parameter.
#[derive(Default)]
pub(crate) struct ArgAttrs {
    /// `#[arg]` alone: force the parameter to be an argument even if its type is named
    /// `Context` or `State`.
    pub force: bool,
    /// `#[arg(header = "Region")]`: mirror the argument in the `Mcp-Param-Region` header.
    pub header: Option<LitStr>,
    /// `#[arg(sensitive)]`: a secret: its schema says `writeOnly`, and the audit trail
    /// (`sake::middleware::Audit`) never records it.
    pub sensitive: bool,
}

pub(crate) fn parse_arg_attr(cx: &Ctxt, attr: &syn::Attribute, out: &mut ArgAttrs) {
    match &attr.meta {
        syn::Meta::Path(_) => out.force = true,
        syn::Meta::List(list) => {
            out.force = true;
            let parsed = list.parse_args_with(|input: ParseStream<'_>| {
                options(cx, input, |opt| match opt.name().as_str() {
                    "header" => {
                        set_once(cx, &mut out.header, opt.string("\"Name\"")?, &opt.key);
                        Ok(())
                    }
                    "sensitive" => {
                        out.sensitive = opt.flag()?.value;
                        Ok(())
                    }
                    other => Err(syn::Error::new(
                        opt.key.span(),
                        format!("unknown #[arg] option `{other}`; expected `header = \"Name\"` or `sensitive`"),
                    )),
                });
                Ok(())
            });
            if let Err(e) = parsed {
                cx.push(e);
            }
        }
        syn::Meta::NameValue(nv) => cx.error_spanned_by(
            nv,
            "write #[arg], #[arg(header = \"Name\")] or #[arg(sensitive)]",
        ),
    }
}
