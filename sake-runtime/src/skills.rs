//! Skills: Agent Skills served over MCP (the skills extension, `io.modelcontextprotocol/skills`).
//! See docs/skills.md.
//!
//! A skill is a directory with a `SKILL.md` (YAML frontmatter: `name`, `description`, …) and
//! supporting files. A server serves each file as a resource `skill://<skill-path>/<file>`;
//! on 2026-07-28 it also answers `skills/list`, `skills/get` and `resources/directory/read`,
//! and on the handshake revisions the same files are ordinary resources.
//!
//! Skills come from a directory embedded at compile time, checked there (frontmatter, names,
//! limits) with digests and sizes computed once:
//!
//! ```ignore
//! sake::skills!("skills");                          // every skill under ./skills
//! sake::skills!("skills/internal", scopes("staff")); // only for callers with the scope
//! ```
//!
//! or from code, for skills a server generates: [`SkillDef::new`] with the files' bytes
//! (checked and digested at start-up), or [`SkillDef::dynamic`] for content that changes
//! (served with `"resources": "dynamic"`), given to [`Server::skill`](crate::Server::skill).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::handler::{Location, ResourceError};
use crate::protocol::types::{JsonObject, Resource};

/// The future a [`SkillSource`] returns.
pub use crate::handler::BoxFuture;
pub use crate::protocol::skills::{
    DIRECTORY_MIME_TYPE, EXTENSION, META_PREFIX, Skill, SkillResource, SkillResources, digest,
};

/// What `sake::skills!` embeds: a directory's files with their digests, and the skills in it.
/// Submitted to `inventory`, so that [`Server::from_registry`](crate::Server::from_registry)
/// serves it; the fields are the macro's business.
#[derive(Debug)]
pub struct EmbeddedSkills {
    /// The directory, as written in the macro.
    pub dir: &'static str,
    /// Every file under it, by its path relative to it.
    pub files: &'static [EmbeddedFile],
    /// Every skill (a directory with a `SKILL.md`), by its path relative to it.
    pub skills: &'static [EmbeddedSkill],
    /// The OAuth scopes a caller needs to see and read them.
    pub scopes: &'static [&'static str],
    /// Where the macro is.
    pub location: Location,
}

/// A file of [`EmbeddedSkills`].
#[derive(Debug)]
pub struct EmbeddedFile {
    /// Its path under the directory (`acme/billing/refunds/SKILL.md`).
    pub path: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
    /// `sha256:…` of the bytes, computed at compile time.
    pub digest: &'static str,
}

/// A skill of [`EmbeddedSkills`].
#[derive(Debug)]
pub struct EmbeddedSkill {
    /// Its path under the directory (`acme/billing/refunds`).
    pub path: &'static str,
    /// Its frontmatter, as a JSON object.
    pub frontmatter: &'static str,
}

inventory::collect!(EmbeddedSkills);

/// Where a dynamic skill's content comes from ([`SkillDef::dynamic`]).
pub trait SkillSource: Send + Sync + 'static {
    /// The current bytes of a file of the skill, by its path in the skill (`SKILL.md`,
    /// `data/today.csv`); `Ok(None)` when there is no such file.
    fn read(&self, path: &str) -> BoxFuture<Result<Option<Vec<u8>>, ResourceError>>;
    /// The paths of the files the skill has now (`resources/directory/read` lists them).
    fn files(&self) -> BoxFuture<Vec<String>>;
}

/// A skill defined in code, for [`Server::skill`](crate::Server::skill).
pub struct SkillDef {
    path: String,
    content: Content,
    scopes: &'static [&'static str],
}

enum Content {
    Files(Vec<(String, Vec<u8>)>),
    Dynamic {
        skill_md: String,
        source: Arc<dyn SkillSource>,
    },
}

impl std::fmt::Debug for SkillDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillDef")
            .field("path", &self.path)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl SkillDef {
    /// A skill at `skill://<path>` (`git-workflow`, `acme/billing/refunds`: its last segment
    /// is its name) whose files are given with [`file`](Self::file). Its `SKILL.md` is
    /// checked, and every file digested, at start-up.
    pub fn new(path: impl Into<String>) -> SkillDef {
        SkillDef {
            path: path.into(),
            content: Content::Files(Vec::new()),
            scopes: &[],
        }
    }

    /// A skill whose content is generated: its entry says `"resources": "dynamic"`, and its
    /// files are read from `source` when asked for. `skill_md` is a `SKILL.md` with the
    /// skill's frontmatter (what `skills/list` shows); the `SKILL.md` that `source` gives must
    /// carry the same frontmatter.
    pub fn dynamic(
        path: impl Into<String>,
        skill_md: impl Into<String>,
        source: impl SkillSource,
    ) -> SkillDef {
        SkillDef {
            path: path.into(),
            content: Content::Dynamic {
                skill_md: skill_md.into(),
                source: Arc::new(source),
            },
            scopes: &[],
        }
    }

    /// Adds a file, by its path in the skill (`SKILL.md`, `references/FORMS.md`). Ignored by a
    /// dynamic skill.
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> SkillDef {
        if let Content::Files(files) = &mut self.content {
            files.push((path.into(), bytes.into()));
        }
        self
    }

    /// The OAuth scopes a caller needs to see and read the skill (feature `auth`).
    pub fn scopes(mut self, scopes: &'static [&'static str]) -> SkillDef {
        self.scopes = scopes;
        self
    }
}

/// A file served as a skill resource.
pub(crate) struct File {
    pub bytes: Bytes,
    pub listing: Resource,
    pub scopes: &'static [&'static str],
}

/// A skill served.
pub(crate) struct Served {
    pub entry: Skill,
    /// `skill://<path>`.
    pub root: String,
    pub scopes: &'static [&'static str],
    /// The listing of its `SKILL.md`.
    pub listing: Resource,
    pub source: Option<Arc<dyn SkillSource>>,
}

/// A directory of the skill namespace: its children's listings, by URI.
pub(crate) struct Dir {
    pub children: BTreeMap<String, Resource>,
    pub scopes: &'static [&'static str],
}

/// What `resources/read` finds at a URI.
pub(crate) enum FileAt<'a> {
    Static(&'a File),
    /// A file of a dynamic skill, by its path in the skill.
    Dynamic(&'a Served, String),
}

/// What `resources/directory/read` finds at a URI.
pub(crate) enum DirAt<'a> {
    Static(&'a Dir),
    /// A directory of a dynamic skill, by its path in the skill (`""`: its root).
    Dynamic(&'a Served, String),
}

/// Every skill the server serves, with its files and directories, built at start-up.
#[derive(Default)]
pub(crate) struct SkillSet {
    embedded: Vec<&'static EmbeddedSkills>,
    /// By `SKILL.md` URI, in order.
    pub skills: BTreeMap<String, Served>,
    pub files: BTreeMap<String, File>,
    pub dirs: BTreeMap<String, Dir>,
}

fn invalid(name: &str, location: &str, reason: impl Into<String>) -> Error {
    Error::InvalidDefinition {
        kind: "skill",
        name: name.to_owned(),
        location: location.to_owned(),
        reason: reason.into(),
    }
}

/// One skill before it is served: its path, frontmatter, files and where it comes from.
struct Pending {
    path: String,
    frontmatter: sake_rules::skill::Frontmatter,
    scopes: &'static [&'static str],
    location: String,
    source: Option<Arc<dyn SkillSource>>,
}

impl SkillSet {
    /// The skills of these embedded directories and code definitions, checked again (names,
    /// frontmatter, limits, no URI twice).
    pub(crate) fn build(
        embedded: Vec<&'static EmbeddedSkills>,
        defs: Vec<SkillDef>,
    ) -> Result<SkillSet, Error> {
        let mut set = SkillSet {
            embedded: embedded.clone(),
            ..SkillSet::default()
        };
        let mut pending = Vec::new();
        let mut files: Vec<(String, Bytes, &'static [&'static str], String)> = Vec::new();
        for e in &embedded {
            let location = e.location.to_string();
            for f in e.files {
                files.push((
                    f.path.to_owned(),
                    Bytes::from_static(f.bytes),
                    e.scopes,
                    location.clone(),
                ));
            }
            for s in e.skills {
                let md = e
                    .files
                    .iter()
                    .find(|f| f.path == format!("{}/SKILL.md", s.path))
                    .and_then(|f| std::str::from_utf8(f.bytes).ok())
                    .ok_or_else(|| invalid(s.path, &location, "its SKILL.md is missing"))?;
                let frontmatter = sake_rules::skill::parse(md)
                    .map_err(|err| invalid(s.path, &location, format!("SKILL.md: {err}")))?;
                pending.push(Pending {
                    path: s.path.to_owned(),
                    frontmatter,
                    scopes: e.scopes,
                    location: location.clone(),
                    source: None,
                });
            }
        }
        for def in defs {
            let location = "Server::skill".to_owned();
            let path = def.path.trim_matches('/').to_owned();
            match def.content {
                Content::Files(list) => {
                    for (file, bytes) in list {
                        files.push((
                            format!("{path}/{}", file.trim_start_matches('/')),
                            Bytes::from(bytes),
                            def.scopes,
                            location.clone(),
                        ));
                    }
                    let md = files
                        .iter()
                        .find(|f| f.0 == format!("{path}/SKILL.md"))
                        .map(|f| String::from_utf8_lossy(&f.1).into_owned())
                        .ok_or_else(|| {
                            invalid(
                                &path,
                                &location,
                                "it has no SKILL.md: add .file(\"SKILL.md\", …)",
                            )
                        })?;
                    let frontmatter = sake_rules::skill::parse(&md)
                        .map_err(|err| invalid(&path, &location, format!("SKILL.md: {err}")))?;
                    pending.push(Pending {
                        path,
                        frontmatter,
                        scopes: def.scopes,
                        location,
                        source: None,
                    });
                }
                Content::Dynamic { skill_md, source } => {
                    let frontmatter = sake_rules::skill::parse(&skill_md)
                        .map_err(|err| invalid(&path, &location, format!("SKILL.md: {err}")))?;
                    pending.push(Pending {
                        path,
                        frontmatter,
                        scopes: def.scopes,
                        location,
                        source: Some(source),
                    });
                }
            }
        }
        // Files: each URI once, every segment usable in a URI as it is.
        let mut defined_at: BTreeMap<String, String> = BTreeMap::new();
        for (path, bytes, scopes, location) in files {
            for segment in path.split('/') {
                sake_rules::skill::check_segment(segment)
                    .map_err(|reason| invalid(&path, &location, reason))?;
            }
            let uri = format!("skill://{path}");
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            let mut listing = Resource::new(uri.clone(), name)
                .with_mime_type(sake_rules::skill::mime_type(&path))
                .with_size(bytes.len() as u64);
            listing.meta = None;
            if set
                .files
                .insert(
                    uri.clone(),
                    File {
                        bytes,
                        listing,
                        scopes,
                    },
                )
                .is_some()
            {
                let first = defined_at.get(&uri).cloned().unwrap_or_default();
                return Err(invalid(
                    &uri,
                    &location,
                    format!(
                        "{first} serves the same file; a skill:// URI is served once (move one of the skills)"
                    ),
                ));
            }
            defined_at.insert(uri, location);
        }
        for p in pending {
            set.add(p)?;
        }
        // Directories: every ancestor of a file, and every dynamic skill's root and its
        // ancestors.
        let mut paths: Vec<(String, Resource, &'static [&'static str])> = set
            .files
            .iter()
            .map(|(uri, f)| (uri.clone(), f.listing.clone(), f.scopes))
            .collect();
        for s in set.skills.values().filter(|s| s.source.is_some()) {
            paths.push((s.root.clone(), directory(&s.root), s.scopes));
        }
        for (uri, listing, scopes) in paths {
            let mut child = uri;
            let mut listing = listing;
            while let Some((parent, _)) = child.rsplit_once('/') {
                // `skill:/` is above the namespace: `skill://docs` is its first directory.
                if !parent.starts_with("skill://") || parent.len() <= "skill://".len() {
                    break;
                }
                let dir = set.dirs.entry(parent.to_owned()).or_insert_with(|| Dir {
                    children: BTreeMap::new(),
                    scopes,
                });
                dir.children.insert(child.clone(), listing);
                // A directory needs the scopes its children share; with children of
                // different scopes, none (each file is still checked when read).
                if dir.scopes != scopes {
                    dir.scopes = &[];
                }
                listing = directory(parent);
                child = parent.to_owned();
            }
        }
        Ok(set)
    }

    fn add(&mut self, p: Pending) -> Result<(), Error> {
        let name = p.path.rsplit('/').next().unwrap_or(&p.path);
        if p.frontmatter.name != name {
            return Err(invalid(
                &p.path,
                &p.location,
                format!(
                    "SKILL.md's `name` is {:?}, but the skill's directory is {name:?}: they must be equal",
                    p.frontmatter.name
                ),
            ));
        }
        let root = format!("skill://{}", p.path);
        let uri = format!("{root}/SKILL.md");
        let frontmatter: JsonObject = serde_json::from_str(&p.frontmatter.json)
            .map_err(|e| invalid(&p.path, &p.location, format!("frontmatter: {e}")))?;
        let resources = if p.source.is_some() {
            SkillResources::Dynamic
        } else {
            // SKILL.md first, then every file under the skill's directory (nested skills'
            // included), in order.
            let prefix = format!("{root}/");
            let mut list: Vec<SkillResource> = Vec::new();
            let mut total = 0u64;
            for (file_uri, f) in self.files.range(prefix.clone()..) {
                if !file_uri.starts_with(&prefix) {
                    break;
                }
                total += f.bytes.len() as u64;
                let entry = SkillResource::of(file_uri.clone(), &f.bytes);
                if *file_uri == uri {
                    list.insert(0, entry);
                } else {
                    list.push(entry);
                }
            }
            if list.len() > sake_rules::skill::MAX_FILES {
                return Err(invalid(
                    &p.path,
                    &p.location,
                    format!(
                        "it has {} files; a skill has at most {} (nested skills' files count too)",
                        list.len(),
                        sake_rules::skill::MAX_FILES
                    ),
                ));
            }
            if total > sake_rules::skill::MAX_TOTAL_BYTES {
                return Err(invalid(
                    &p.path,
                    &p.location,
                    format!(
                        "its files hold {total} bytes; a skill holds at most {} (16 MiB)",
                        sake_rules::skill::MAX_TOTAL_BYTES
                    ),
                ));
            }
            SkillResources::Files(list)
        };
        let mut meta = Map::new();
        for (key, value) in &p.frontmatter.fields {
            let value: Value = serde_json::from_str(value).unwrap_or(Value::Null);
            meta.insert(format!("{META_PREFIX}{key}"), value);
        }
        let mut listing = Resource::new(uri.clone(), p.frontmatter.name.clone())
            .with_description(p.frontmatter.description.clone())
            .with_mime_type("text/markdown");
        if let Some(f) = self.files.get_mut(&uri) {
            listing.size = Some(f.bytes.len() as u64);
        }
        if !meta.is_empty() {
            listing.meta = Some(meta);
        }
        if let Some(f) = self.files.get_mut(&uri) {
            f.listing = listing.clone();
        }
        let served = Served {
            entry: Skill {
                uri: uri.clone(),
                frontmatter,
                resources,
            },
            root,
            scopes: p.scopes,
            listing,
            source: p.source,
        };
        if self.skills.insert(uri.clone(), served).is_some() {
            return Err(invalid(
                &uri,
                &p.location,
                "another skill is served at the same path; a skill:// URI is served once",
            ));
        }
        Ok(())
    }

    /// The embedded directories it was built from.
    pub(crate) fn embedded(&self) -> Vec<&'static EmbeddedSkills> {
        self.embedded.clone()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Every distinct non-empty scope set.
    pub(crate) fn scope_sets(&self) -> impl Iterator<Item = &'static [&'static str]> + '_ {
        self.skills.values().map(|s| s.scopes)
    }

    /// A skill by the URI of its `SKILL.md`.
    pub(crate) fn skill(&self, uri: &str) -> Option<&Served> {
        self.skills.get(uri)
    }

    /// What is at a file URI: a served file, or a file of a dynamic skill (a path of
    /// segments a skill file can have: never `..`, `.`, an empty segment, a backslash or `%`).
    pub(crate) fn file(&self, uri: &str) -> Option<FileAt<'_>> {
        if let Some(f) = self.files.get(uri) {
            return Some(FileAt::Static(f));
        }
        let (skill, rest) = self.dynamic_under(uri)?;
        is_skill_path(rest).then(|| FileAt::Dynamic(skill, rest.to_owned()))
    }

    /// What is at a directory URI.
    pub(crate) fn directory(&self, uri: &str) -> Option<DirAt<'_>> {
        if let Some((skill, rest)) = self.dynamic_under(uri) {
            let dir = rest.strip_suffix('/').unwrap_or(rest);
            return (dir.is_empty() || is_skill_path(dir))
                .then(|| DirAt::Dynamic(skill, dir.to_owned()));
        }
        if let Some(s) = self
            .skills
            .values()
            .find(|s| s.source.is_some() && s.root == uri)
        {
            return Some(DirAt::Dynamic(s, String::new()));
        }
        self.dirs.get(uri).map(DirAt::Static)
    }

    /// The dynamic skill a URI is under, and the path in it.
    fn dynamic_under<'a>(&self, uri: &'a str) -> Option<(&Served, &'a str)> {
        self.skills
            .values()
            .filter(|s| s.source.is_some())
            .find_map(|s| {
                uri.strip_prefix(s.root.as_str())
                    .and_then(|r| r.strip_prefix('/'))
                    .map(|rest| (s, rest))
            })
    }

    /// The resources `resources/list` shows: every file, each once (a dynamic skill: its
    /// `SKILL.md`).
    pub(crate) fn resources_visible(&self, visible: &dyn Fn(&[&str]) -> bool) -> Vec<Resource> {
        let mut out: BTreeMap<&str, &Resource> = BTreeMap::new();
        for (uri, f) in &self.files {
            if visible(f.scopes) {
                out.insert(uri, &f.listing);
            }
        }
        for s in self.skills.values().filter(|s| s.source.is_some()) {
            if visible(s.scopes) {
                out.insert(&s.entry.uri, &s.listing);
            }
        }
        out.into_values().cloned().collect()
    }

    /// The entries `skills/list` shows.
    pub(crate) fn entries_visible(&self, visible: &dyn Fn(&[&str]) -> bool) -> Vec<Value> {
        self.skills
            .values()
            .filter(|s| visible(s.scopes))
            .map(|s| serde_json::to_value(&s.entry).unwrap_or(Value::Null))
            .collect()
    }
}

/// The listing of a directory resource.
pub(crate) fn directory(uri: &str) -> Resource {
    let name = uri.rsplit('/').next().unwrap_or(uri);
    let name = name.strip_prefix("skill://").unwrap_or(name);
    Resource::new(uri, name).with_mime_type(DIRECTORY_MIME_TYPE)
}

/// Whether `path` (in a skill) is one a skill file can have: non-empty segments, each a
/// name a `skill://` URI holds as it is (`sake_rules::skill::check_segment`: no `.` or `..`,
/// no backslash, no `%`, so nothing is decoded).
pub(crate) fn is_skill_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|s| sake_rules::skill::check_segment(s).is_ok())
}

/// The children of a directory of a dynamic skill, from the paths of its files.
pub(crate) fn dynamic_children(root: &str, dir: &str, files: &[String]) -> Option<Vec<Resource>> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{}/", dir.trim_end_matches('/'))
    };
    let mut children: BTreeMap<String, Resource> = BTreeMap::new();
    let mut is_dir = dir.is_empty();
    for path in files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        is_dir = true;
        match rest.split_once('/') {
            Some((sub, _)) => {
                let uri = format!("{root}/{prefix}{sub}");
                children.insert(uri.clone(), directory(&uri));
            }
            None => {
                let uri = format!("{root}/{path}");
                children.insert(
                    uri.clone(),
                    Resource::new(uri, rest).with_mime_type(sake_rules::skill::mime_type(rest)),
                );
            }
        }
    }
    is_dir.then(|| children.into_values().collect())
}

/// The `capabilities.extensions` entry the server declares.
pub(crate) fn declaration() -> Value {
    json!({ "directoryRead": true })
}
