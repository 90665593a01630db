//! Tool names: 1 to 64 characters of `A-Z`, `a-z`, `0-9`, `_`, `.` and `-`.
//!
//! The MCP specification (server/tools, "Tool Names") says a name SHOULD be 1 to 128
//! characters of these; SEP-986 and the official conformance suite
//! (`tools-name-format`) hold names to 64. sake applies the stricter of the two, so that every
//! client accepts every tool.

use std::fmt;

/// The longest tool name, in characters.
pub const MAX_LEN: usize = 64;

/// The rule as a regular expression.
pub const PATTERN: &str = "^[A-Za-z0-9_.-]{1,64}$";

/// The rule in words.
pub const RULE: &str = "a tool name is 1 to 64 characters of A-Z, a-z, 0-9, `_`, `.` and `-`";

/// Why a name is not a valid tool name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    Empty,
    /// The first character that is not allowed.
    Char(char),
    /// The name is longer than [`MAX_LEN`]; the length in characters.
    TooLong(usize),
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("it is empty"),
            NameError::Char(c) => write!(f, "{c:?} is not allowed"),
            NameError::TooLong(n) => write!(f, "it is {n} characters long"),
        }
    }
}

impl std::error::Error for NameError {}

/// Whether `c` may appear in a tool name.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Checks a tool name against [`PATTERN`].
pub fn check(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(c) = name.chars().find(|&c| !is_name_char(c)) {
        return Err(NameError::Char(c));
    }
    // Every character is ASCII here, so bytes are characters.
    match name.len() {
        n if n > MAX_LEN => Err(NameError::TooLong(n)),
        _ => Ok(()),
    }
}

/// Whether `name` matches [`PATTERN`].
pub fn is_valid(name: &str) -> bool {
    check(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names() {
        for name in ["add", "a.b-c_D9", "X", &"x".repeat(64)] {
            assert_eq!(check(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn each_reason_says_what_is_wrong() {
        assert_eq!(check(""), Err(NameError::Empty));
        assert_eq!(check(&"x".repeat(65)), Err(NameError::TooLong(65)));
        assert_eq!(check("has space"), Err(NameError::Char(' ')));
        assert_eq!(check("a/b"), Err(NameError::Char('/')));
        assert_eq!(check("café"), Err(NameError::Char('é')));
        // A bad character is reported before the length.
        assert_eq!(check(&"é".repeat(65)), Err(NameError::Char('é')));
        assert_eq!(NameError::Empty.to_string(), "it is empty");
        assert_eq!(NameError::Char(' ').to_string(), "' ' is not allowed");
        assert_eq!(
            NameError::TooLong(72).to_string(),
            "it is 72 characters long"
        );
    }
}
