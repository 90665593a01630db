//! The RFC 6570 subset sake's resource URIs use: level 1 (simple string expansion), where
//! each expression is one `{name}` of letters, digits and `_` (RFC 6570 §2.3 `varname`,
//! without `.` and percent-encoded triplets), and two expressions are separated by literal
//! text so that a URI matches a template in one way only.
//!
//! A template without expressions is a plain URI (a static resource).

use std::fmt;

/// One piece of a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// Literal text, never empty.
    Literal(&'a str),
    /// A `{name}` expression: the variable's name.
    Var(&'a str),
}

/// Why a text is not a template sake supports. Its `Display` is the reason, without the
/// template.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `}` with no `{` before it.
    UnopenedBrace,
    /// A `{` with no `}` after it.
    UnclosedBrace,
    /// An expression that is not a level-1 variable name (an operator such as `+`, a
    /// modifier, a list, or nothing); the text between the braces.
    NotLevel1(String),
    /// Two expressions with no literal text between them.
    AdjacentVariables,
    /// A variable that appears twice; its name.
    RepeatedVariable(String),
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::UnopenedBrace => f.write_str("a `}` without its `{`"),
            TemplateError::UnclosedBrace => f.write_str("a `{` without its `}`"),
            TemplateError::NotLevel1(name) => write!(
                f,
                "`{{{name}}}` is not a level-1 variable (letters, digits and `_` only; no operators such as + # / ? &)"
            ),
            TemplateError::AdjacentVariables => {
                f.write_str("two variables must be separated by literal text")
            }
            TemplateError::RepeatedVariable(name) => write!(f, "variable `{name}` appears twice"),
        }
    }
}

impl std::error::Error for TemplateError {}

/// Whether `name` is a variable name sake supports: letters, digits and `_`, at least one.
pub fn is_varname(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Splits a template into literal text and variables, in order.
pub fn parse(template: &str) -> Result<Vec<Part<'_>>, TemplateError> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let Some(open) = rest.find('{') else {
            if rest.contains('}') {
                return Err(TemplateError::UnopenedBrace);
            }
            parts.push(Part::Literal(rest));
            break;
        };
        let literal = &rest[..open];
        if literal.contains('}') {
            return Err(TemplateError::UnopenedBrace);
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or(TemplateError::UnclosedBrace)?;
        let name = &after[..close];
        if !is_varname(name) {
            return Err(TemplateError::NotLevel1(name.to_owned()));
        }
        if matches!(parts.last(), Some(Part::Var(_))) {
            return Err(TemplateError::AdjacentVariables);
        }
        if parts.contains(&Part::Var(name)) {
            return Err(TemplateError::RepeatedVariable(name.to_owned()));
        }
        parts.push(Part::Var(name));
        rest = &after[close + 1..];
    }
    Ok(parts)
}

/// The variables of parsed parts, in order.
pub fn variables<'a, 'p>(parts: &'p [Part<'a>]) -> impl Iterator<Item = &'a str> + 'p {
    parts.iter().filter_map(|p| match *p {
        Part::Var(v) => Some(v),
        Part::Literal(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(t: &str) -> Result<Vec<&str>, TemplateError> {
        parse(t).map(|parts| variables(&parts).collect())
    }

    #[test]
    fn splits_literals_and_variables() {
        assert_eq!(
            parse("docs://about"),
            Ok(vec![Part::Literal("docs://about")])
        );
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(
            parse("users://{id}/posts/{slug}"),
            Ok(vec![
                Part::Literal("users://"),
                Part::Var("id"),
                Part::Literal("/posts/"),
                Part::Var("slug"),
            ])
        );
        assert_eq!(parse("{a}"), Ok(vec![Part::Var("a")]));
        assert_eq!(vars("repo://{owner}/{name_2}"), Ok(vec!["owner", "name_2"]));
    }

    #[test]
    fn refuses_what_level_one_does_not_have() {
        use TemplateError::*;
        assert_eq!(parse("a{"), Err(UnclosedBrace));
        assert_eq!(parse("a}"), Err(UnopenedBrace));
        assert_eq!(parse("a://{x}}"), Err(UnopenedBrace));
        assert_eq!(parse("files://{+path}"), Err(NotLevel1("+path".into())));
        assert_eq!(parse("{}"), Err(NotLevel1(String::new())));
        assert_eq!(parse("x{a b}"), Err(NotLevel1("a b".into())));
        assert_eq!(parse("{a.b}"), Err(NotLevel1("a.b".into())));
        assert_eq!(parse("{a}{b}"), Err(AdjacentVariables));
        assert_eq!(parse("{a}/{a}"), Err(RepeatedVariable("a".into())));
    }

    #[test]
    fn reasons_read_as_sentences() {
        assert_eq!(
            TemplateError::UnopenedBrace.to_string(),
            "a `}` without its `{`"
        );
        assert_eq!(
            TemplateError::UnclosedBrace.to_string(),
            "a `{` without its `}`"
        );
        assert_eq!(
            TemplateError::NotLevel1("+path".into()).to_string(),
            "`{+path}` is not a level-1 variable (letters, digits and `_` only; no operators such as + # / ? &)"
        );
        assert_eq!(
            TemplateError::AdjacentVariables.to_string(),
            "two variables must be separated by literal text"
        );
        assert_eq!(
            TemplateError::RepeatedVariable("x".into()).to_string(),
            "variable `x` appears twice"
        );
    }
}
