//! [`PathSegment`]: a URI template variable that is safe to join to a file system path.

use std::fmt;
use std::str::FromStr;

/// A URI template variable that is one safe path segment.
///
/// RFC 6570 expands `{id}` of `files://{id}` from the percent-decoded URI, so `id` can be
/// `../../etc/passwd`: correct as URI templates go, and a trap for a function that joins it to
/// a path. Take the variable as `PathSegment` instead of `String` and such a URI is refused
/// with `-32602` before the function runs: no `/` or `\`, no `.` or `..`, no NUL or other
/// control character, not empty.
///
/// ```
/// use sake::PathSegment;
///
/// let ok: PathSegment = "report-2026.txt".parse().unwrap();
/// assert_eq!(ok.as_str(), "report-2026.txt");
/// for bad in ["..", "a/b", "a\\b", "", "a\0b", "."] {
///     assert!(bad.parse::<PathSegment>().is_err(), "{bad:?}");
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathSegment(String);

impl PathSegment {
    /// The segment.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The segment, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for PathSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for PathSegment {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for PathSegment {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

/// Why a value is not a safe path segment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("it must be one path segment: {0}")]
pub struct NotASegment(&'static str);

impl FromStr for PathSegment {
    type Err = NotASegment;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(NotASegment("empty"));
        }
        if s == "." || s == ".." {
            return Err(NotASegment("`.` and `..` name other directories"));
        }
        if s.contains(['/', '\\']) {
            return Err(NotASegment("no `/` or `\\`"));
        }
        if s.chars().any(char::is_control) {
            return Err(NotASegment("no NUL or other control character"));
        }
        Ok(PathSegment(s.to_owned()))
    }
}
