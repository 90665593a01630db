//! The skills extension on the wire (`io.modelcontextprotocol/skills`, SEP-2640): its
//! identifier, the skill entry of `skills/list` and `skills/get`, digests, and directory
//! resources. The extension exists where the revision table says so (`Features::skills`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::types::JsonObject;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The prefix of the `_meta` keys the extension reserves on skill resources.
pub const META_PREFIX: &str = "io.modelcontextprotocol.skills/";

/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// `sha256:` and the 64 lowercase hexadecimal digits of the SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    out
}

/// Whether `digest` has the form `sha256:{64 lowercase hex}`.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A file of a skill, with the digest and size of its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and the hexadecimal SHA-256 of its raw bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

impl SkillResource {
    /// The entry of a file with these bytes.
    pub fn of(uri: impl Into<String>, bytes: &[u8]) -> Self {
        SkillResource {
            uri: uri.into(),
            digest: digest(bytes),
            size: bytes.len() as u64,
        }
    }
}

/// A skill's files: every one of them with its digest, or `"dynamic"` for a skill whose
/// content is generated and has no stable digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillResources {
    /// The complete list: `SKILL.md` and every supporting file, nested skills' included.
    Files(Vec<SkillResource>),
    /// `"dynamic"`.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "dynamic" => Ok(SkillResources::Dynamic),
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(SkillResources::Files)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "`resources` must be an array of files or \"dynamic\", not {other}"
            ))),
        }
    }
}

/// The entry of one skill, as `skills/list` and `skills/get` give it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Skill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its `SKILL.md` frontmatter, verbatim, as a JSON object (`name` and `description`
    /// always there).
    pub frontmatter: JsonObject,
    /// Its files.
    pub resources: SkillResources,
}

impl Skill {
    /// Its `name`.
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Its `description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The URI of its directory: its `uri` without `/SKILL.md`.
    pub fn root(&self) -> &str {
        self.uri
            .strip_suffix(SKILL_MD)
            .and_then(|r| r.strip_suffix('/'))
            .unwrap_or(&self.uri)
    }

    /// The entry of a listed file, by URI.
    pub fn file(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }
}

/// JSON values equal as a JSON reader sees them: numbers by value (`1` and `1.0` are one
/// number), objects whatever the order of their keys.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_digest(&digest(b"x")));
        assert!(!is_digest("sha256:E3B0"));
    }

    #[test]
    fn entries_read_back() {
        let dynamic: Skill = serde_json::from_value(json!({"uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "d"}, "resources": "dynamic"}))
        .unwrap();
        assert_eq!(dynamic.resources, SkillResources::Dynamic);
        assert_eq!(dynamic.root(), "skill://a");
        assert_eq!(
            serde_json::to_value(&dynamic).unwrap()["resources"],
            json!("dynamic")
        );
        assert!(
            serde_json::from_value::<Skill>(json!({"uri": "u", "frontmatter": {}, "resources": 3}))
                .is_err()
        );
        assert!(same_json(
            &json!({"a": 1, "b": [1.0]}),
            &json!({"b": [1], "a": 1.0})
        ));
        assert!(!same_json(&json!({"a": 1}), &json!({"a": 1, "b": null})));
    }
}
