//! The catalog's one lookup: what a URI or name a client sends denotes, and whether this
//! caller may see it.
//!
//! Every request that names a definition by URI or name — `resources/read` (of a resource, a
//! template's match, a skill's file or a view), `resources/subscribe`, a
//! `subscriptions/listen` filter, `skills/get`, `resources/directory/read`, `prompts/get` —
//! finds it through [`Shared::denoted`]: the registry's lookup for its [`Kind`], then the
//! scopes that guard what was found ([`Shared::authorize`]: 401 for an anonymous caller, 403
//! for a token without them). A name that denotes nothing gets its kind's error; nothing is
//! found without the check. A server mounted into this one adds its definitions here: a kind
//! whose `find` asks it, guarded the same way.

use serde_json::json;

use super::Shared;
use crate::handler::PromptDef;
use crate::protocol::jsonrpc::RpcError;
use crate::registry::{Named, Registry};
use crate::skills::{DirAt, Served};

/// A kind of definition a client names by URI or name.
pub(crate) trait Kind {
    /// What a URI or name of this kind denotes.
    type Found<'r>;
    /// What a refusal calls it (`resource`, `skill`, …), before the URI or name.
    const WHAT: &'static str;
    /// The registry's lookup.
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<Self::Found<'r>>;
    /// The scopes that guard what was found, and whether it needs a signed-in caller.
    fn access(found: &Self::Found<'_>) -> (&'static [&'static str], bool);
    /// The error for a URI or name that denotes nothing of this kind.
    fn unknown(registry: &Registry, key: &str) -> RpcError;
}

/// A resource URI (`resources/read`, `resources/subscribe`, a listen filter): a skill's file,
/// a view, a static resource, or the first template that matches ([`Registry::named`]).
pub(crate) struct Resource;

impl Kind for Resource {
    type Found<'r> = Named<'r>;
    const WHAT: &'static str = "resource";
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<Named<'r>> {
        registry.named(key)
    }
    fn access(found: &Named<'_>) -> (&'static [&'static str], bool) {
        found.access()
    }
    fn unknown(_: &Registry, key: &str) -> RpcError {
        RpcError::resource_not_found(key)
    }
}

/// A skill, by the URI of its `SKILL.md` (`skills/get`).
pub(crate) struct Skill;

impl Kind for Skill {
    type Found<'r> = &'r Served;
    const WHAT: &'static str = "skill";
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<&'r Served> {
        registry.skills.skill(key)
    }
    fn access(found: &&Served) -> (&'static [&'static str], bool) {
        (found.scopes, false)
    }
    fn unknown(_: &Registry, key: &str) -> RpcError {
        RpcError::invalid_params(format!("No skill is served at {key}"))
            .with_data(json!({ "uri": key }))
    }
}

/// A directory of the skill namespace (`resources/directory/read`).
pub(crate) struct Directory;

impl Kind for Directory {
    type Found<'r> = DirAt<'r>;
    const WHAT: &'static str = "directory";
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<DirAt<'r>> {
        registry.skills.directory(key)
    }
    fn access(found: &DirAt<'_>) -> (&'static [&'static str], bool) {
        match found {
            DirAt::Static(dir) => (dir.scopes, false),
            DirAt::Dynamic(skill, _) => (skill.scopes, false),
        }
    }
    fn unknown(registry: &Registry, key: &str) -> RpcError {
        let what = if registry.skills.file(key).is_some() {
            "is not a directory resource"
        } else {
            "is not a directory this server serves"
        };
        RpcError::invalid_params(format!("{key} {what}")).with_data(json!({ "uri": key }))
    }
}

/// A prompt, by name (`prompts/get`).
pub(crate) struct Prompt;

impl Kind for Prompt {
    type Found<'r> = &'static PromptDef;
    const WHAT: &'static str = "prompt";
    fn find(registry: &Registry, key: &str) -> Option<&'static PromptDef> {
        registry.prompt(key)
    }
    fn access(found: &&'static PromptDef) -> (&'static [&'static str], bool) {
        (found.scopes, found.principal)
    }
    fn unknown(_: &Registry, key: &str) -> RpcError {
        RpcError::invalid_params(format!("Unknown prompt: {key}")).with_data(json!({ "name": key }))
    }
}

impl Shared {
    /// What `key` denotes as a `K`, if the caller (its request's `extensions`) may see it:
    /// the kind's error for a key that denotes nothing, the 401 or 403 of
    /// [`Shared::authorize`] for a caller without the scopes that guard it.
    pub(crate) fn denoted<K: Kind>(
        &self,
        extensions: &http::Extensions,
        key: &str,
    ) -> Result<K::Found<'_>, RpcError> {
        let found = K::find(&self.registry, key).ok_or_else(|| K::unknown(&self.registry, key))?;
        let (scopes, principal) = K::access(&found);
        self.callers.authorize(
            extensions,
            format_args!("{} `{key}`", K::WHAT),
            scopes,
            principal,
        )?;
        Ok(found)
    }

    /// Whether the caller may follow `uri` (a subscription, a listen filter): it is no
    /// longer than [`MAX_URI_BYTES`](super::MAX_URI_BYTES), and it denotes a resource the
    /// caller may read, as `resources/read` checks. A client may make the server remember
    /// only URIs it could read.
    pub(crate) fn followable_uri(
        &self,
        extensions: &http::Extensions,
        uri: &str,
    ) -> Result<(), RpcError> {
        if uri.len() > super::MAX_URI_BYTES {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: the URI has {} bytes; this server serves none longer than {}",
                uri.len(),
                super::MAX_URI_BYTES
            )));
        }
        self.denoted::<Resource>(extensions, uri).map(drop)
    }
}
