//! The names of the `Mcp-Param-{Name}` headers a tool's arguments are mirrored in (MCP
//! 2026-07-28, server/tools "x-mcp-header"): `Name` is an RFC 9110 token (§5.6.2), and two
//! arguments of one tool may not use names that differ only in case, since header names are
//! case-insensitive (RFC 9110 §5.1).

use std::fmt;

/// The characters of an RFC 9110 token besides ASCII letters and digits.
pub const TOKEN_SPECIALS: &str = "!#$%&'*+-.^_`|~";

/// The prefix of the header an argument is mirrored in.
pub const PARAM_PREFIX: &str = "Mcp-Param-";

/// Why two header names clash, as a parenthetical note.
pub const CASE_NOTE: &str = "(header names are case-insensitive)";

/// Whether `c` is an RFC 9110 `tchar`.
pub fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || TOKEN_SPECIALS.contains(c)
}

/// Whether `name` is an RFC 9110 `token`: one or more `tchar`s.
pub fn is_token(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_tchar)
}

/// Whether two header names are the same header.
pub fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// A name that is not a token. Its `Display` is `"<name>" is not a valid header name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidName<'a>(pub &'a str);

impl fmt::Display for InvalidName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a valid header name", self.0)
    }
}

impl std::error::Error for InvalidName<'_> {}

/// Checks the `Name` of an `Mcp-Param-{Name}` header.
pub fn check_param_name(name: &str) -> Result<(), InvalidName<'_>> {
    if is_token(name) {
        Ok(())
    } else {
        Err(InvalidName(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        for ok in ["Region", "x-trace_id", "A1", "!#$%&'*+-.^_`|~"] {
            assert_eq!(check_param_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "Bad Name", "a:b", "Région", "a\"b", "a(b)", "a/b", "tab\t",
        ] {
            assert_eq!(check_param_name(bad), Err(InvalidName(bad)), "{bad}");
        }
        assert_eq!(
            InvalidName("a:b").to_string(),
            "\"a:b\" is not a valid header name"
        );
    }

    #[test]
    fn names_compare_regardless_of_case() {
        assert!(same_name("Region", "REGION"));
        assert!(!same_name("Region", "Regions"));
    }
}
