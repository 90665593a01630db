//! The skills extension, client side: list and get skill entries, load a skill (its `SKILL.md`
//! checked against the entry: size, digest, frontmatter), read its files on demand, each
//! checked the same way. Nothing is read ahead of need: listing reads no file.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{Client, ClientError};
use crate::protocol::skills::{
    DIRECTORY_MIME_TYPE, EXTENSION, SKILL_MD, Skill, SkillResources, digest, is_digest, same_json,
};
use crate::protocol::types::{ReadResourceResult, Resource, ResourceContents};

/// A skill whose `SKILL.md` was read and matched its entry: the host may act on it.
#[derive(Clone, Debug)]
pub struct LoadedSkill {
    entry: Skill,
    skill_md: String,
}

impl LoadedSkill {
    /// The entry it was loaded under (the files it may read are those it lists).
    pub fn entry(&self) -> &Skill {
        &self.entry
    }

    /// The `SKILL.md`, verified.
    pub fn skill_md(&self) -> &str {
        &self.skill_md
    }

    /// The URI of a file of the skill by its path in the skill (`references/FORMS.md`),
    /// resolved against the skill's root as a relative reference in `SKILL.md` is.
    pub fn uri_of(&self, path: &str) -> String {
        format!("{}/{}", self.entry.root(), path.trim_start_matches("./"))
    }
}

fn failed(uri: &str, reason: impl Into<String>) -> ClientError {
    ClientError::SkillVerification {
        uri: uri.to_owned(),
        reason: reason.into(),
    }
}

/// The raw bytes of the first contents of a read.
fn bytes_of(uri: &str, read: &ReadResourceResult) -> Result<Vec<u8>, ClientError> {
    match read.contents.first() {
        Some(ResourceContents::Text(t)) => Ok(t.text.as_bytes().to_vec()),
        Some(ResourceContents::Blob(b)) => base64::engine::general_purpose::STANDARD
            .decode(&b.blob)
            .map_err(|e| failed(uri, format!("its blob is not Base64: {e}"))),
        None => Err(failed(uri, "the read returned no contents")),
    }
}

/// Checks an entry before anything of it is loaded: the rules every host applies.
pub(crate) fn check_entry(skill: &Skill) -> Result<(), ClientError> {
    let uri = &skill.uri;
    let Some(root) = uri.strip_suffix(&format!("/{SKILL_MD}")) else {
        return Err(failed(uri, "the entry's uri does not end in /SKILL.md"));
    };
    let last = root.rsplit('/').next().unwrap_or(root);
    let last = last.rsplit("://").next().unwrap_or(last);
    if skill.name() != last {
        return Err(failed(
            uri,
            format!(
                "the skill's path ends in {last:?} but its frontmatter name is {:?}",
                skill.name()
            ),
        ));
    }
    if skill.description().is_empty() {
        return Err(failed(uri, "the entry's frontmatter has no description"));
    }
    if let SkillResources::Files(files) = &skill.resources {
        if !files.iter().any(|f| f.uri == *uri) {
            return Err(failed(
                uri,
                "the entry's resources do not list its SKILL.md",
            ));
        }
        let prefix = format!("{root}/");
        let mut seen = std::collections::HashSet::new();
        for f in files {
            if !f.uri.starts_with(&prefix) {
                return Err(failed(
                    uri,
                    format!("the entry lists {} outside the skill's directory", f.uri),
                ));
            }
            if !is_digest(&f.digest) {
                return Err(failed(
                    uri,
                    format!(
                        "{} has the digest {:?}, not sha256:<64 hex>",
                        f.uri, f.digest
                    ),
                ));
            }
            if !seen.insert(f.uri.as_str()) {
                return Err(failed(uri, format!("the entry lists {} twice", f.uri)));
            }
        }
    }
    Ok(())
}

impl Client {
    /// Whether the server declares the skills extension, and with `directoryRead`.
    pub fn skills_offered(&self) -> Option<bool> {
        let caps = self.server_capabilities();
        let ext = caps.extensions.as_ref()?.get(EXTENSION)?;
        Some(ext.get("directoryRead").and_then(Value::as_bool) == Some(true))
    }

    fn require_skills(&self) -> Result<bool, ClientError> {
        self.skills_offered().ok_or_else(|| {
            ClientError::Protocol(format!(
                "the server does not declare the skills extension ({EXTENSION}); its skill:// files, if any, are ordinary resources"
            ))
        })
    }

    /// Every skill the server lists (`skills/list`, all pages). Reads no file.
    pub async fn list_skills(&self) -> Result<Vec<Skill>, ClientError> {
        self.require_skills()?;
        self.list_all("skills/list", "skills")
            .await?
            .into_iter()
            .map(|v| {
                serde_json::from_value(v).map_err(|error| ClientError::Decode {
                    method: "skills/list".to_owned(),
                    error,
                })
            })
            .collect()
    }

    /// The entry of one skill by the URI of its `SKILL.md` (`skills/get`), listed or not.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, ClientError> {
        self.require_skills()?;
        let mut result: Map<String, Value> =
            Self::decode("skills/get", &self.send("skills/get", params(uri)).await?)?;
        let skill = result.remove("skill").unwrap_or(Value::Null);
        serde_json::from_value(skill).map_err(|error| ClientError::Decode {
            method: "skills/get".to_owned(),
            error,
        })
    }

    /// Loads a skill: checks its entry, reads its `SKILL.md` and verifies it against the entry
    /// (size, then digest, then the frontmatter field by field). Any mismatch is
    /// [`ClientError::SkillVerification`] and nothing is returned: the content must not be
    /// used. A `"dynamic"` skill offers no digests; its frontmatter is still compared.
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, ClientError> {
        check_entry(skill)?;
        let uri = &skill.uri;
        let bytes = self.read_verified(skill, uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| failed(uri, "SKILL.md is not UTF-8"))?;
        let json = sake_rules::skill::frontmatter_json(&text)
            .map_err(|e| failed(uri, format!("SKILL.md: {e}")))?;
        let file: Value = serde_json::from_str(&json)
            .map_err(|e| failed(uri, format!("SKILL.md's frontmatter: {e}")))?;
        let entry = Value::Object(skill.frontmatter.clone());
        if !same_json(&file, &entry) {
            let mut differ = Vec::new();
            let (f, e) = (file.as_object(), entry.as_object());
            let keys: std::collections::BTreeSet<&String> = f
                .into_iter()
                .flat_map(|m| m.keys())
                .chain(e.into_iter().flat_map(|m| m.keys()))
                .collect();
            for k in keys {
                let a = f.and_then(|m| m.get(k)).unwrap_or(&Value::Null);
                let b = e.and_then(|m| m.get(k)).unwrap_or(&Value::Null);
                if !same_json(a, b) {
                    differ.push(k.as_str());
                }
            }
            return Err(failed(
                uri,
                format!(
                    "SKILL.md's frontmatter differs from the entry's in {}",
                    differ.join(", ")
                ),
            ));
        }
        Ok(LoadedSkill {
            entry: skill.clone(),
            skill_md: text,
        })
    }

    /// Reads a file of a loaded skill, by URI, verified against the entry it was loaded
    /// under: a file the entry does not list is refused without a read.
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        uri: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let root = format!("{}/", skill.entry.root());
        if !uri.starts_with(&root) {
            return Err(failed(uri, "the file is not in the skill's directory"));
        }
        self.read_verified(&skill.entry, uri).await
    }

    /// Reads a file and checks its size, then its digest, against the entry.
    async fn read_verified(&self, skill: &Skill, uri: &str) -> Result<Vec<u8>, ClientError> {
        let listed = match &skill.resources {
            SkillResources::Files(_) => Some(skill.file(uri).ok_or_else(|| {
                failed(
                    uri,
                    "the skill's entry does not list this file: refresh it with skills/get",
                )
            })?),
            SkillResources::Dynamic => None,
        };
        let read = self.read(uri).await?;
        let bytes = bytes_of(uri, &read)?;
        if let Some(entry) = listed {
            if bytes.len() as u64 != entry.size {
                return Err(failed(
                    uri,
                    format!(
                        "the file has {} bytes, the entry says {}",
                        bytes.len(),
                        entry.size
                    ),
                ));
            }
            let got = digest(&bytes);
            if got != entry.digest {
                return Err(failed(
                    uri,
                    format!(
                        "the file's digest is {got}, the entry says {}",
                        entry.digest
                    ),
                ));
            }
        }
        Ok(bytes)
    }

    /// The direct children of a directory resource (`resources/directory/read`, all pages);
    /// subdirectories have the MIME type `inode/directory`. Only for a server that declares
    /// `directoryRead`.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>, ClientError> {
        if !self.require_skills()? {
            return Err(ClientError::Protocol(
                "the server does not declare directoryRead; it need not know resources/directory/read"
                    .into(),
            ));
        }
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..self.inner.core.limits.max_pages {
            let mut p = params(uri);
            if let Some(c) = &cursor {
                p.insert("cursor".into(), json!(c));
            }
            let raw = self.send("resources/directory/read", p).await?;
            let mut page: Map<String, Value> = Self::decode("resources/directory/read", &raw)?;
            let items: Vec<Resource> = serde_json::from_value(
                page.remove("resources").unwrap_or(Value::Array(Vec::new())),
            )
            .map_err(|error| ClientError::Decode {
                method: "resources/directory/read".to_owned(),
                error,
            })?;
            out.extend(items);
            match page.remove("nextCursor") {
                Some(Value::String(next)) if seen.insert(next.clone()) => cursor = Some(next),
                Some(Value::String(next)) => {
                    return Err(ClientError::Protocol(format!(
                        "resources/directory/read gave the cursor {next:?} a second time"
                    )));
                }
                _ => return Ok(out),
            }
        }
        Err(ClientError::TooManyPages {
            method: "resources/directory/read".to_owned(),
            limit: self.inner.core.limits.max_pages,
        })
    }
}

fn params(uri: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("uri".into(), json!(uri));
    p
}

/// Whether a listed resource is a directory.
pub fn is_directory(resource: &Resource) -> bool {
    resource.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
}
