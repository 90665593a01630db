//! The skills extension in the engine: `skills/get`, `resources/directory/read`, and
//! `resources/read` of skill files (`skills/list` is a list like the others, in `dispatch`).
//! Embedded files are answered from memory; a dynamic skill's from its source, within
//! `Limits::request_timeout`.
//!
//! These are the catalog's reads of skills: what a URI denotes and whether the caller may see
//! it is [`Catalog::denoted`]'s, the paging is the lists'.

use bytes::Bytes;
use serde_json::{Value, json};

use super::catalog::{self, Catalog};
use super::dispatch::Dispatched;
use crate::handler::ResourceError;
use crate::handler::context::RequestParts;
use crate::protocol::jsonrpc::{RpcError, clip, raw_string};
use crate::protocol::meta::Params;
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::{ReadResourceResult, ResourceContents};
use crate::skills::{DirAt, FileAt, dynamic_children};

/// `params.uri`, required, a string.
fn uri_of(params: &Params<'_>) -> Result<String, RpcError> {
    match params.uri {
        None => Err(RpcError::invalid_params(
            "Invalid params: missing required parameter `uri`",
        )),
        Some(raw) => raw_string(raw).map(|u| u.into_owned()).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "Invalid params: `uri` must be a string, not {}",
                clip(raw.get())
            ))
        }),
    }
}

/// The contents of a skill file: text when its bytes are UTF-8 (the same bytes, so the
/// digest holds), a blob otherwise.
fn contents(uri: &str, mime_type: Option<&str>, bytes: &[u8]) -> ResourceContents {
    match std::str::from_utf8(bytes) {
        Ok(text) => ResourceContents::text(uri, mime_type, text),
        Err(_) => ResourceContents::blob(uri, mime_type, bytes),
    }
}

impl Catalog {
    /// `skills/get`: the entry of a skill the server serves, by the URI of its `SKILL.md`;
    /// -32602 for any other URI.
    pub(crate) fn get_skill(
        &self,
        parts: &RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let uri = uri_of(params)?;
        let skill = self.denoted::<catalog::Skill>(&parts.extensions, &uri)?;
        Ok(Dispatched::Ready(Ok(Bytes::from(render::result(
            rev,
            &self.env,
            Shape::Plain,
            Cache::Cacheable,
            &json!({ "skill": skill.entry }),
        )))))
    }

    /// `resources/directory/read`: the direct children of a directory of the skill namespace,
    /// paged like the lists; -32602 for a URI that is not a directory.
    pub(crate) fn read_directory(
        &self,
        parts: &RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let uri = uri_of(params)?;
        let at = self.denoted::<catalog::Directory>(&parts.extensions, &uri)?;
        let cursor = match params.cursor {
            None => None,
            Some(raw) if raw.get() == "null" => None,
            Some(raw) => Some(
                raw_string(raw)
                    .ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "Invalid params: `cursor` must be a string, not {}",
                            clip(raw.get())
                        ))
                    })?
                    .into_owned(),
            ),
        };
        let env = self.env.clone();
        let page_size = self.page_size;
        let page = move |children: Vec<Value>| {
            let pages = catalog::paginate(
                rev,
                &env,
                page_size,
                Cache::None,
                "directory",
                "resources",
                children,
            );
            catalog::decode_cursor("directory", cursor.as_deref(), pages.0.len())
                .map(|i| pages.0[i].clone())
        };
        match at {
            DirAt::Static(dir) => {
                let children = dir
                    .children
                    .values()
                    .map(|r| render::resource(r, rev))
                    .collect();
                Ok(Dispatched::Ready(page(children)))
            }
            DirAt::Dynamic(skill, dir) => {
                let source = skill.source.clone();
                let root = skill.root.clone();
                let limit = self.request_timeout;
                Ok(Dispatched::Pending(Box::pin(async move {
                    let Some(source) = source else {
                        return Err(RpcError::internal("the skill has no source"));
                    };
                    let files = tokio::time::timeout(limit, source.files())
                        .await
                        .map_err(|_| super::invoker::timed_out(&root, limit))?;
                    let children = dynamic_children(&root, &dir, &files)
                        .ok_or_else(|| {
                            RpcError::invalid_params(format!(
                                "{uri} is not a directory this server serves"
                            ))
                            .with_data(json!({ "uri": uri }))
                        })?
                        .iter()
                        .map(|r| render::resource(r, rev))
                        .collect();
                    page(children)
                })))
            }
        }
    }

    /// `resources/read` of a skill file the caller may read ([`Catalog::denoted`]): from
    /// memory, or from a dynamic skill's source.
    pub(crate) fn read_skill_file(
        &self,
        parts: &RequestParts,
        uri: &str,
        file: FileAt<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let env = self.env.clone();
        let render = move |result: ReadResourceResult| {
            Bytes::from(render::result(
                rev,
                &env,
                Shape::ReadResource,
                Cache::Cacheable,
                &result,
            ))
        };
        match file {
            FileAt::Static(f) => {
                let c = contents(uri, f.listing.mime_type.as_deref(), &f.bytes);
                Ok(Dispatched::Ready(Ok(render(ReadResourceResult::new(
                    vec![c],
                )))))
            }
            FileAt::Dynamic(skill, path) => {
                let Some(source) = skill.source.clone() else {
                    return Err(RpcError::resource_not_found(uri));
                };
                let uri = uri.to_owned();
                let limit = self.request_timeout;
                Ok(Dispatched::Pending(Box::pin(async move {
                    // Only a file the skill lists now (a source never sees another path).
                    let read = tokio::time::timeout(limit, async {
                        if source.files().await.contains(&path) {
                            source.read(&path).await
                        } else {
                            Ok(None)
                        }
                    })
                    .await
                    .map_err(|_| super::invoker::timed_out(&uri, limit))?;
                    let bytes = match read {
                        Ok(Some(bytes)) => bytes,
                        Ok(None) | Err(ResourceError::NotFound(_)) => {
                            return Err(render::error(rev, RpcError::resource_not_found(&uri)));
                        }
                        Err(ResourceError::InvalidUri(m)) => {
                            return Err(RpcError::invalid_params(m));
                        }
                    };
                    let mime = sake_rules::skill::mime_type(&path);
                    Ok(render(ReadResourceResult::new(vec![contents(
                        &uri,
                        Some(mime),
                        &bytes,
                    )])))
                })))
            }
        }
    }
}
