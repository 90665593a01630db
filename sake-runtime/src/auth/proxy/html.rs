//! The proxy's pages (consent, errors): fixed templates whose `{{name}}` slots are filled with
//! HTML-escaped text only. Nothing from a request or a client's metadata is ever pasted into
//! markup unescaped.

/// Escapes `text` for an HTML text node or a double-quoted attribute value.
pub(crate) fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (but tab and newline) have no business on a page.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// A value for a slot: text (escaped), a list of texts (each escaped, wrapped in `<li>`), or
/// markup that is a constant of this program (`&'static`: never from a request).
pub(crate) enum Value<'a> {
    Text(&'a str),
    Items(&'a [String]),
    Constant(&'static str),
}

/// Renders `template`, replacing each `{{name}}` with the escaped value of `name`. A slot
/// without a value renders empty (templates are constants of this file, checked by tests).
pub(crate) fn render(template: &str, values: &[(&str, Value<'_>)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match values.iter().find(|(n, _)| *n == name).map(|(_, v)| v) {
            Some(Value::Text(t)) => escape(t, &mut out),
            Some(Value::Items(items)) => {
                for i in *items {
                    out.push_str("<li>");
                    escape(i, &mut out);
                    out.push_str("</li>");
                }
            }
            Some(Value::Constant(markup)) => out.push_str(markup),
            None => {}
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

const STYLE: &str = r#"<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2129;margin:0;padding:2rem 1rem}
main{max-width:32rem;margin:0 auto;background:#fff;border-radius:12px;box-shadow:0 2px 12px rgba(0,0,0,.08);padding:2rem}
h1{font-size:1.3rem;margin:0 0 1rem}
.client{font-weight:600}
.uri{font-family:ui-monospace,Menlo,Consolas,monospace;background:#f0f1f3;border-radius:6px;padding:.4rem .6rem;word-break:break-all;display:block;margin:.3rem 0 1rem}
ul{padding-left:1.2rem}
.note{color:#5c6370;font-size:.9rem;overflow-wrap:anywhere}
.buttons{display:flex;gap:.75rem;margin-top:1.5rem}
button{font-size:1rem;border-radius:8px;padding:.6rem 1.2rem;cursor:pointer;border:1px solid #c9ccd1;background:#fff}
button[name=approve]{background:#1f6feb;border-color:#1f6feb;color:#fff}
</style>"#;

/// The consent page. Slots: `client`, `client_id`, `redirect_uri`, `scopes` (items),
/// `resource`, `server`, `request`, `csrf`, `action`, `style`, `kind`.
pub(crate) const CONSENT: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Allow {{client}}?</title>{{style}}</head>
<body><main>
<h1>Allow <span class="client">{{client}}</span> to use {{server}} as you?</h1>
<p>The application <span class="client">{{client}}</span> ({{kind}}) asks to act on your behalf at</p>
<span class="uri">{{resource}}</span>
<p>If you allow it, you will sign in and be sent back to this address, which the application controls:</p>
<span class="uri">{{redirect_uri}}</span>
<p>It asks for:</p>
<ul>{{scopes}}</ul>
<p class="note">Client id: {{client_id}}. Allow only applications you started yourself, and only if you trust the address above.</p>
<form method="post" action="{{action}}">
<input type="hidden" name="request" value="{{request}}">
<input type="hidden" name="csrf" value="{{csrf}}">
<div class="buttons">
<button type="submit" name="approve" value="1">Allow</button>
<button type="submit" name="deny" value="1">Deny</button>
</div>
</form>
</main></body></html>
"#;

/// An error page. Slots: `title`, `message`, `style`.
pub(crate) const ERROR: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{title}}</title>{{style}}</head>
<body><main><h1>{{title}}</h1><p>{{message}}</p></main></body></html>
"#;

/// Renders a page: `values`, and the stylesheet in `{{style}}`.
pub(crate) fn page(template: &str, values: &[(&str, Value<'_>)]) -> String {
    let mut all: Vec<(&str, Value<'_>)> = vec![("style", Value::Constant(STYLE))];
    for (n, v) in values {
        all.push((
            n,
            match v {
                Value::Text(t) => Value::Text(t),
                Value::Items(i) => Value::Items(i),
                Value::Constant(c) => Value::Constant(c),
            },
        ));
    }
    render(template, &all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_escaped() {
        let scopes = ["mcp:tools".to_owned(), "<b>admin</b>".to_owned()];
        let html = page(
            CONSENT,
            &[
                (
                    "client",
                    Value::Text("Evil <script>alert(1)</script> \"app\""),
                ),
                (
                    "redirect_uri",
                    Value::Text("https://e.example/cb?a=1&b='2'"),
                ),
                ("scopes", Value::Items(&scopes)),
                ("request", Value::Text("r\"><img src=x>")),
            ],
        );
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("Evil &lt;script&gt;alert(1)&lt;/script&gt; &quot;app&quot;"));
        assert!(html.contains("https://e.example/cb?a=1&amp;b=&#39;2&#39;"));
        assert!(html.contains("<li>&lt;b&gt;admin&lt;/b&gt;</li>"));
        assert!(html.contains(r#"value="r&quot;&gt;&lt;img src=x&gt;""#));
        assert!(html.contains(r#"<button type="submit" name="approve""#));
        assert!(html.contains("<style>"));
        assert!(!html.contains("{{"));
    }
}
