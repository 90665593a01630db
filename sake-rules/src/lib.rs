//! The rules that [sake](https://docs.rs/sake-mcp)'s macros check at compile time and its runtime
//! checks again at start-up (for descriptors built by hand), written once so that the two
//! cannot disagree:
//!
//! - [`tool_name`]: what a tool's name may be;
//! - [`uri_template`]: the RFC 6570 subset a resource URI may use (level-1 `{var}`s);
//! - [`header`]: the names of `Mcp-Param-*` headers (`x-mcp-header`);
//! - [`scope`]: OAuth scope tokens (`scopes(...)`);
//! - [`skill`]: Agent Skills: `SKILL.md` frontmatter, names, limits, file names.
//! - [`apps`]: MCP Apps views: their `ui://` URIs, the origins of their Content Security
//!   Policy, their dedicated domain.
//!
//! Each check returns a typed reason whose `Display` is the sentence both sides print; the
//! macro adds what to change in the source, the runtime where the definition is.
//!
//! Its one dependency is a YAML reader (for `SKILL.md`). It is not meant to be used directly:
//! depend on `sake`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod apps;
pub mod header;
pub mod scope;
pub mod skill;
pub mod tool_name;
pub mod uri_template;
