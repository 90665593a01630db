//! Agent Skills (<https://agentskills.io/specification>) as the MCP skills extension serves
//! them (`io.modelcontextprotocol/skills`): the `SKILL.md` frontmatter, rendered verbatim as
//! JSON, and the rules a skill must follow — its name, its description, its limits, and the
//! file names that can appear in a `skill://` URI as they are.
//!
//! `sake::skills!` checks these at compile time, the runtime at start-up for skills built in
//! code, and sake's client when it verifies a `SKILL.md` against the entry it holds.

use std::fmt;

use yaml_rust2::{Yaml, YamlLoader};

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The most files a skill may have (`SKILL.md` and those of nested skills included).
pub const MAX_FILES: usize = 512;
/// The most bytes a skill's files may hold together (16 MiB).
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// The longest skill name.
pub const NAME_MAX: usize = 64;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 1024;
/// The longest `compatibility`, in characters.
pub const COMPATIBILITY_MAX: usize = 500;
/// Keys of the frontmatter's `metadata` reserved for metadata MCP extensions define (none yet).
pub const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// Why a skill name is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    /// It is empty.
    Empty,
    /// It has more than [`NAME_MAX`] characters.
    TooLong(usize),
    /// A character other than `a-z`, `0-9` and `-`.
    Character(char),
    /// It starts or ends with `-`.
    EdgeHyphen,
    /// It has `--`.
    DoubleHyphen,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("a skill name cannot be empty"),
            NameError::TooLong(n) => write!(
                f,
                "a skill name has at most {NAME_MAX} characters, this one {n}"
            ),
            NameError::Character(c) => write!(
                f,
                "a skill name has only lowercase letters a-z, digits and `-`, not {c:?}"
            ),
            NameError::EdgeHyphen => f.write_str("a skill name cannot start or end with `-`"),
            NameError::DoubleHyphen => f.write_str("a skill name cannot contain `--`"),
        }
    }
}

/// Checks a skill name: 1 to 64 of `a-z`, `0-9` and `-`, no `-` at either end, no `--`.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(NameError::Character(c));
    }
    if name.len() > NAME_MAX {
        return Err(NameError::TooLong(name.len()));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(NameError::EdgeHyphen);
    }
    if name.contains("--") {
        return Err(NameError::DoubleHyphen);
    }
    Ok(())
}

/// Whether a file or directory name can be a segment of a `skill://` URI as it is (RFC 3986
/// `pchar` without `%` and `:`): letters, digits and `-._~!$&'()*+,;=@`. Not `.` or `..`.
pub fn check_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() || segment == "." || segment == ".." {
        return Err(format!("{segment:?} cannot be a path segment"));
    }
    match segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=@".contains(*c)))
    {
        Some(c) => Err(format!(
            "{segment:?} has {c:?}, which a skill:// URI would have to percent-encode; use letters, digits and -._~ in file and directory names"
        )),
        None => Ok(()),
    }
}

/// The MIME type of a skill file, by its extension (`SKILL.md` is `text/markdown`).
pub fn mime_type(path: &str) -> &'static str {
    let ext = path
        .rsplit('/')
        .next()
        .and_then(|n| n.rsplit_once('.'))
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "xml" => "application/xml",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "sh" | "bash" => "text/x-shellscript",
        "rs" => "text/x-rust",
        "sql" => "application/sql",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

/// Why a `SKILL.md` frontmatter is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontmatterError(pub String);

impl fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FrontmatterError {}

fn fail<T>(message: impl Into<String>) -> Result<T, FrontmatterError> {
    Err(FrontmatterError(message.into()))
}

/// The YAML between the `---` lines that open `SKILL.md` (a byte order mark before them is
/// allowed; the closing line may end in spaces or tabs).
pub fn frontmatter_text(md: &str) -> Result<&str, FrontmatterError> {
    let md = md.strip_prefix('\u{feff}').unwrap_or(md);
    let rest = md
        .strip_prefix("---\n")
        .or_else(|| md.strip_prefix("---\r\n"))
        .ok_or_else(|| {
            FrontmatterError(
                "SKILL.md must begin with YAML frontmatter: a line `---`, the fields, and a line `---`"
                    .into(),
            )
        })?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            let yaml = &rest[..offset];
            return Ok(yaml
                .strip_suffix('\n')
                .map(|y| y.strip_suffix('\r').unwrap_or(y))
                .unwrap_or(yaml));
        }
        offset += line.len();
    }
    fail("SKILL.md's frontmatter is not closed: add a line `---` after its fields")
}

/// A `SKILL.md` frontmatter, rendered as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontmatter {
    /// The whole frontmatter as a JSON object, its fields in the order written.
    pub json: String,
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// Every other top-level field: its key and its value as JSON.
    pub fields: Vec<(String, String)>,
}

/// Reads the frontmatter of a `SKILL.md` as JSON, whatever its fields (what a client does
/// before comparing it with an entry). YAML 1.2 core schema; a value JSON cannot hold (an
/// infinite or NaN number, a key that is not a scalar) is an error.
pub fn frontmatter_json(md: &str) -> Result<String, FrontmatterError> {
    let yaml = frontmatter_text(md)?;
    let doc = load(yaml)?;
    let mut out = String::new();
    json(&doc, &mut out)?;
    Ok(out)
}

/// Reads and checks the frontmatter of a `SKILL.md` against the Agent Skills rules: an
/// object with a `name` that follows [`check_name`], a `description` of 1 to 1024 characters,
/// and, when present, a string `license`, a `compatibility` of 1 to 500 characters, a
/// `metadata` of string values none under [`RESERVED_METADATA_PREFIX`], and a string
/// `allowed-tools`. Other fields pass through.
pub fn parse(md: &str) -> Result<Frontmatter, FrontmatterError> {
    let yaml = frontmatter_text(md)?;
    let doc = load(yaml)?;
    let Yaml::Hash(map) = &doc else {
        return fail("the frontmatter must be a YAML mapping of fields (`name: …`)");
    };
    let mut name = None;
    let mut description = None;
    let mut fields = Vec::new();
    for (k, v) in map {
        let field = key(k)?;
        let text = |what: &str| -> Result<String, FrontmatterError> {
            match v {
                Yaml::String(s) => Ok(s.clone()),
                _ => fail(format!("`{what}` must be a string")),
            }
        };
        match field.as_str() {
            "name" => {
                let n = text("name")?;
                check_name(&n).map_err(|e| FrontmatterError(format!("`name`: {e}")))?;
                name = Some(n);
            }
            "description" => {
                let d = text("description")?;
                let chars = d.chars().count();
                if d.trim().is_empty() {
                    return fail(
                        "`description` cannot be empty: say what the skill does and when to use it",
                    );
                }
                if chars > DESCRIPTION_MAX {
                    return fail(format!(
                        "`description` has {chars} characters; at most {DESCRIPTION_MAX}"
                    ));
                }
                description = Some(d);
            }
            other => {
                match other {
                    "license" | "allowed-tools" => {
                        text(other)?;
                    }
                    "compatibility" => {
                        let c = text(other)?;
                        let chars = c.chars().count();
                        if chars == 0 || chars > COMPATIBILITY_MAX {
                            return fail(format!(
                                "`compatibility` has {chars} characters; it needs 1 to {COMPATIBILITY_MAX}"
                            ));
                        }
                    }
                    "metadata" => {
                        let Yaml::Hash(meta) = v else {
                            return fail(
                                "`metadata` must be a mapping of string keys to string values",
                            );
                        };
                        for (mk, mv) in meta {
                            let mk = key(mk)?;
                            if mk.starts_with(RESERVED_METADATA_PREFIX) {
                                return fail(format!(
                                    "`metadata` key {mk:?}: keys under {RESERVED_METADATA_PREFIX:?} are reserved for MCP extensions (none defines one yet)"
                                ));
                            }
                            if !matches!(mv, Yaml::String(_)) {
                                return fail(format!(
                                    "`metadata` value of {mk:?} must be a string (quote it)"
                                ));
                            }
                        }
                    }
                    _ => {}
                }
                let mut value = String::new();
                json(v, &mut value)?;
                fields.push((field, value));
            }
        }
    }
    let Some(name) = name else {
        return fail("the frontmatter has no `name`: add `name: <the skill's directory name>`");
    };
    let Some(description) = description else {
        return fail(
            "the frontmatter has no `description`: add `description: <what the skill does and when to use it>`",
        );
    };
    let mut out = String::new();
    json(&doc, &mut out)?;
    Ok(Frontmatter {
        json: out,
        name,
        description,
        fields,
    })
}

fn load(yaml: &str) -> Result<Yaml, FrontmatterError> {
    let mut docs = YamlLoader::load_from_str(yaml)
        .map_err(|e| FrontmatterError(format!("the frontmatter is not valid YAML: {e}")))?;
    match docs.len() {
        0 => Ok(Yaml::Null),
        1 => Ok(docs.remove(0)),
        _ => fail("the frontmatter holds more than one YAML document"),
    }
}

fn key(k: &Yaml) -> Result<String, FrontmatterError> {
    match k {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        Yaml::Null => Ok("null".to_owned()),
        _ => fail("a frontmatter key must be a string"),
    }
}

fn json(y: &Yaml, out: &mut String) -> Result<(), FrontmatterError> {
    match y {
        Yaml::Null => out.push_str("null"),
        Yaml::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Yaml::Integer(i) => out.push_str(&i.to_string()),
        Yaml::Real(r) => match y.as_f64() {
            Some(f) if f.is_finite() => {
                let text = format!("{f:?}");
                // `1.0` is the number 1, as every JSON reader of YAML renders it.
                out.push_str(text.strip_suffix(".0").unwrap_or(&text));
            }
            _ => {
                return fail(format!(
                    "the number {r} cannot be written as JSON; quote it to make it a string"
                ));
            }
        },
        Yaml::String(s) => string(s, out),
        Yaml::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json(item, out)?;
            }
            out.push(']');
        }
        Yaml::Hash(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(&key(k)?, out);
                out.push(':');
                json(v, out)?;
            }
            out.push('}');
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return fail(
                "the frontmatter has a value that is not plain YAML (an unknown alias or tag)",
            );
        }
    }
    Ok(())
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(check_name("git-workflow"), Ok(()));
        assert_eq!(check_name("a1"), Ok(()));
        assert_eq!(check_name(&"a".repeat(64)), Ok(()));
        assert_eq!(check_name(&"a".repeat(65)), Err(NameError::TooLong(65)));
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name("Git"), Err(NameError::Character('G')));
        assert_eq!(check_name("a_b"), Err(NameError::Character('_')));
        assert_eq!(check_name("-a"), Err(NameError::EdgeHyphen));
        assert_eq!(check_name("a-"), Err(NameError::EdgeHyphen));
        assert_eq!(check_name("a--b"), Err(NameError::DoubleHyphen));
    }

    #[test]
    fn frontmatter_renders_verbatim_in_order() {
        let md = "---\nname: pdf-processing\ndescription: Extract, fill\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1\"\n  team: docs\nn: 1.0\nlist: [a, 2, true, null]\n---\n\n# Body\n";
        let fm = parse(md).unwrap();
        assert_eq!(
            fm.json,
            r#"{"name":"pdf-processing","description":"Extract, fill","license":"Apache-2.0","metadata":{"version":"2.1","team":"docs"},"n":1,"list":["a",2,true,null]}"#
        );
        assert_eq!(fm.name, "pdf-processing");
        assert_eq!(fm.fields[0], ("license".into(), "\"Apache-2.0\"".into()));
        assert_eq!(frontmatter_json(md).unwrap(), fm.json);
        // CRLF, a byte order mark, a closing line with trailing blanks.
        let crlf = "\u{feff}---\r\nname: a\r\ndescription: \"say \\\"hi\\\"\"\r\n--- \r\nbody";
        assert_eq!(
            parse(crlf).unwrap().json,
            r#"{"name":"a","description":"say \"hi\""}"#
        );
    }

    #[test]
    fn what_is_refused() {
        let err = |md: &str| parse(md).unwrap_err().0;
        assert!(err("# no frontmatter").starts_with("SKILL.md must begin"));
        assert!(err("---\nname: a\n").contains("not closed"));
        assert!(err("---\ndescription: d\n---\n").contains("no `name`"));
        assert!(err("---\nname: a\n---\n").contains("no `description`"));
        assert!(err("---\nname: Bad\ndescription: d\n---\n").contains("lowercase"));
        assert!(err("---\nname: a\ndescription: \"\"\n---\n").contains("cannot be empty"));
        assert!(
            err(&format!(
                "---\nname: a\ndescription: {}\n---\n",
                "x".repeat(1025)
            ))
            .contains("1025 characters")
        );
        assert!(err("---\nname: a\ndescription: d\nmetadata:\n  n: 1\n---\n").contains("quote"));
        assert!(
            err("---\nname: a\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n")
                .contains("reserved")
        );
        assert!(err("---\nname: a\ndescription: d\nx: .inf\n---\n").contains("cannot be written"));
        assert!(err("---\nname: a\nname: b\ndescription: d\n---\n").contains("not valid YAML"));
        assert!(err("---\n- a\n---\n").contains("mapping"));
    }

    #[test]
    fn segments_and_types() {
        assert!(check_segment("FORMS.md").is_ok());
        assert!(check_segment("a b").unwrap_err().contains("' '"));
        assert!(check_segment("..").is_err());
        assert_eq!(mime_type("SKILL.md"), "text/markdown");
        assert_eq!(mime_type("scripts/extract.py"), "text/x-python");
        assert_eq!(mime_type("LICENSE"), "application/octet-stream");
    }
}
