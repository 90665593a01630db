//! OAuth scope tokens (RFC 6749 §3.3): `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`, that
//! is printable ASCII except space, `"` and `\`.

use std::fmt;

/// The rule in words.
pub const RULE: &str = "a scope is one or more printable ASCII characters other than space, `\"` and `\\` (RFC 6749 §3.3)";

/// Why a text is not a scope token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeError {
    /// The scope is empty.
    Empty,
    /// The first character that is not allowed.
    Char(char),
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeError::Empty => f.write_str("it is empty"),
            ScopeError::Char(c) => write!(f, "{c:?} is not allowed"),
        }
    }
}

impl std::error::Error for ScopeError {}

/// Whether `c` may appear in a scope token.
pub fn is_scope_char(c: char) -> bool {
    matches!(c, '\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e')
}

/// Checks one scope token.
pub fn check(scope: &str) -> Result<(), ScopeError> {
    if scope.is_empty() {
        return Err(ScopeError::Empty);
    }
    match scope.chars().find(|&c| !is_scope_char(c)) {
        Some(c) => Err(ScopeError::Char(c)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_tokens() {
        for ok in [
            "files:read",
            "openid",
            "https://api.example.com/x.y",
            "a!#[]~",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        assert_eq!(check(""), Err(ScopeError::Empty));
        assert_eq!(check("files read"), Err(ScopeError::Char(' ')));
        assert_eq!(check("a\"b"), Err(ScopeError::Char('"')));
        assert_eq!(check("a\\b"), Err(ScopeError::Char('\\')));
        assert_eq!(check("é"), Err(ScopeError::Char('é')));
        assert_eq!(check("a\tb"), Err(ScopeError::Char('\t')));
        assert_eq!(check("a\x7f"), Err(ScopeError::Char('\x7f')));
        assert_eq!(ScopeError::Char(' ').to_string(), "' ' is not allowed");
    }
}
