//! RFC 6570 level-1 URI templates (`users://{id}/profile`): parsing and matching.

use std::fmt;

/// A parsed level-1 template: literal text and `{variable}`s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

/// Why a template is not a valid level-1 template.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct TemplateError {
    /// The template.
    pub template: String,
    /// What is wrong with it.
    pub reason: String,
}

impl UriTemplate {
    /// Parses a template (the grammar is `sake_rules::uri_template`'s).
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let parts = sake_rules::uri_template::parse(template).map_err(|e| TemplateError {
            template: template.to_owned(),
            reason: e.to_string(),
        })?;
        let parts = parts
            .into_iter()
            .map(|p| match p {
                sake_rules::uri_template::Part::Literal(l) => Part::Literal(l.to_owned()),
                sake_rules::uri_template::Part::Var(v) => Part::Var(v.to_owned()),
            })
            .collect();
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Whether the template has no variables (a plain URI).
    pub fn is_static(&self) -> bool {
        self.variables().next().is_none()
    }

    /// Matches a URI, returning each variable's percent-decoded value.
    ///
    /// A level-1 value is non-empty and holds no `/`, `?` or `#` (they would have been
    /// percent-encoded on expansion).
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut vars = Vec::new();
        let mut rest = uri;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(lit) => {
                    rest = rest.strip_prefix(lit.as_str())?;
                }
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || raw.contains(['/', '?', '#']) {
                        return None;
                    }
                    vars.push((name.clone(), percent_decode(raw)?));
                    rest = &rest[end..];
                }
            }
            i += 1;
        }
        rest.is_empty().then_some(vars)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hi = (hex[0] as char).to_digit(16)?;
            let lo = (hex[1] as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t).unwrap().matches(uri)
    }

    #[test]
    fn matches_level_one_templates() {
        assert_eq!(
            vars("users://{id}/profile", "users://42/profile"),
            Some(vec![("id".into(), "42".into())])
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/a%20b/data"),
            Some(vec![("id".into(), "a b".into())])
        );
        assert_eq!(
            vars("repo://{owner}/{name}", "repo://me/sake"),
            Some(vec![
                ("owner".into(), "me".into()),
                ("name".into(), "sake".into())
            ])
        );
        assert_eq!(vars("users://{id}/profile", "users://42/other"), None);
        assert_eq!(vars("users://{id}/profile", "users:///profile"), None);
        assert_eq!(vars("users://{id}/profile", "users://a/b/profile"), None);
        assert_eq!(vars("users://{id}", "users://a%zz"), None);
        assert_eq!(vars("users://{id}", "users://%ff"), None);
        assert_eq!(vars("static://x", "static://x"), Some(vec![]));
    }

    #[test]
    fn rejects_what_level_one_does_not_have() {
        for bad in ["a{", "a}", "{+path}", "{a}{b}", "{}", "{a}/{a}", "x{a b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        assert!(UriTemplate::parse("static://x").unwrap().is_static());
    }
}
