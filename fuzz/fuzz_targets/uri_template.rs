//! URI templates: parsing and matching.
//!
//! Input lines: a template, a URI, then values for the template's variables. Properties:
//! nothing panics; a parsed template keeps its text; a static template matches exactly its
//! own text; expanding a template with percent-encoded values gives a URI that matches with
//! those values (when no literal after a variable could begin inside an encoded value).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sake_runtime::uri_template::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let template = lines.next().unwrap_or_default();
    let uri = lines.next().unwrap_or_default();
    let values: Vec<&str> = lines.collect();
    let Ok(t) = UriTemplate::parse(template) else {
        return;
    };
    assert_eq!(t.as_str(), template);
    assert_eq!(t.to_string(), template);
    let names: Vec<&str> = t.variables().collect();
    for (i, n) in names.iter().enumerate() {
        assert!(!names[..i].contains(n), "variable {n} twice");
    }
    match t.matches(uri) {
        Some(vars) => {
            assert_eq!(vars.len(), names.len());
            for ((name, value), expected) in vars.iter().zip(&names) {
                assert_eq!(name, expected);
                assert!(!value.is_empty());
            }
        }
        None => assert!(!(t.is_static() && uri == template)),
    }
    if t.is_static() {
        assert_eq!(t.matches(uri).is_some(), uri == template);
        return;
    }
    // Round trip: expand with encoded values, then match.
    if values.len() < names.len() || values.iter().take(names.len()).any(|v| v.is_empty()) {
        return;
    }
    let Some(expanded) = expand(template, &names, &values) else {
        return;
    };
    let back = t
        .matches(&expanded)
        .expect("an expansion matches its template");
    for ((name, value), (expected_name, expected)) in back.iter().zip(names.iter().zip(&values)) {
        assert_eq!(name, expected_name);
        assert_eq!(value, expected);
    }
});

/// Expands `template` with each value percent-encoded (all but ASCII letters and digits),
/// or `None` when a literal after a variable begins with a letter, digit or `%`, which an
/// encoded value may contain (matching then legitimately splits elsewhere).
fn expand(template: &str, names: &[&str], values: &[&str]) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    let mut after_var = false;
    while !rest.is_empty() {
        let open = rest.find('{').unwrap_or(rest.len());
        let literal = &rest[..open];
        if after_var
            && literal
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '%')
        {
            return None;
        }
        out.push_str(literal);
        rest = &rest[open..];
        if rest.is_empty() {
            break;
        }
        let close = rest.find('}')?;
        let name = &rest[1..close];
        let i = names.iter().position(|n| *n == name)?;
        for b in values[i].bytes() {
            if b.is_ascii_alphanumeric() {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        rest = &rest[close + 1..];
        after_var = true;
    }
    Some(out)
}
