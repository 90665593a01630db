//! The four protocol revisions sake serves, and what each one allows.
//!
//! Every behaviour that differs between revisions is answered here, as data: handlers never
//! compare version strings. The rendering step (`render.rs`) and the transports read the
//! [`Features`] of a request's revision.

use std::fmt;

use super::types::LoggingLevel;

/// A revision of the Model Context Protocol that sake serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Revision {
    /// 2025-03-26: the first Streamable HTTP revision (batches, no `title`, no structured output).
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation, `MCP-Protocol-Version` header.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, SSE polling.
    V2025_11_25,
    /// 2026-07-28: stateless; every request carries its version and capabilities in `_meta`.
    V2026_07_28,
}

/// Whether a revision is served statelessly or through an `initialize` handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28: no handshake, no session; `_meta` on every request.
    Modern,
    /// 2025-03-26 to 2025-11-25: `initialize`, then a session.
    Legacy,
}

/// Which elicitation modes a revision knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElicitationModes {
    /// No elicitation at all.
    None,
    /// Form mode only.
    Form,
    /// Form and URL mode.
    FormAndUrl,
}

/// What a revision allows; one row of the revision table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Features {
    /// Handshake or stateless.
    pub era: Era,
    /// The lowest level of `notifications/message` sent when the client asked for none:
    /// nothing at all on 2026-07-28 (log messages are asked for per request, in `_meta`);
    /// everything on the handshake revisions until the session's `logging/setLevel`.
    pub default_log_level: Option<LoggingLevel>,
    /// Results carry `resultType`.
    pub result_type: bool,
    /// List and read results carry `ttlMs` and `cacheScope`.
    pub cache_hints: bool,
    /// Results carry `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub server_info_meta: bool,
    /// Top-level `title` on tools, prompts, resources, templates, prompt arguments, Implementation.
    pub titles: bool,
    /// `structuredContent` and `outputSchema`.
    pub structured_output: bool,
    /// `inputSchema`, `outputSchema` and `structuredContent` must be JSON objects.
    pub object_only_schemas: bool,
    /// `resource_link` content blocks.
    pub resource_links: bool,
    /// `annotations.lastModified`.
    pub last_modified: bool,
    /// `icons`, `Implementation.description` and `Implementation.websiteUrl`.
    pub icons: bool,
    /// JSON-RPC batches (arrays) inside a session.
    pub batches: bool,
    /// The `MCP-Protocol-Version` header is required after the handshake.
    pub version_header_required: bool,
    /// Elicitation modes the revision defines.
    pub elicitation: ElicitationModes,
    /// A URL elicitation carries an `elicitationId` (2025-11-25; 2026-07-28 dropped it).
    pub url_elicitation_id: bool,
    /// The code for "resource not found".
    pub resource_not_found_code: i32,
    /// `completion/complete` takes `context.arguments`.
    pub completion_context: bool,
    /// SSE polling (SEP-1699): priming event, `retry`, resumption with `Last-Event-ID`.
    pub sse_polling: bool,
    /// Questions to the client end the call with `input_required` (MRTR) instead of being
    /// server-to-client requests on the call's stream.
    pub input_required: bool,
    /// The code for "the request needs a client capability it did not declare": -32021 in
    /// 2026-07-28; before, invalid params.
    pub missing_capability_code: i32,
    /// The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) exists: a `tools/call`
    /// may be answered with a task, `tasks/get`, `tasks/update` and `tasks/cancel` exist, and
    /// `server/discover` advertises it. Defined for 2026-07-28 only (SEP-2663: servers MUST NOT
    /// treat it as enabling tasks under 2025-11-25, whose experimental tasks are another,
    /// incompatible feature that sake does not serve).
    pub tasks: bool,
    /// The skills extension (`io.modelcontextprotocol/skills`, SEP-2640) exists: `skills/list`,
    /// `skills/get` and `resources/directory/read`, advertised by `server/discover`. Defined
    /// against 2026-07-28; on the handshake revisions a server's skill files are ordinary
    /// resources, listed and read as the others (as the extension says a client without it
    /// sees them).
    pub skills: bool,

    // What a client does differently
    /// A client reaches the revision with `server/discover` (a `DiscoverResult` that lists it);
    /// otherwise with an `initialize` handshake that settles on it.
    pub discover: bool,
    /// Every request carries `params._meta` with `io.modelcontextprotocol/protocolVersion`,
    /// `…/clientCapabilities` and `…/clientInfo`.
    pub request_meta: bool,
    /// Every HTTP request carries its own `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
    /// the called tool's `Mcp-Param-*` (so a client reads the tools' `x-mcp-header`
    /// annotations).
    pub routing_headers: bool,
    /// Over HTTP the server may mint an `Mcp-Session-Id`: the client sends it back, starts a new
    /// session when the server forgot it (404) and deletes it when done.
    pub session_id: bool,
    /// Notifications that answer no request (list changes, resource updates) come on a
    /// `subscriptions/listen` stream; otherwise on the session (the standalone GET stream over
    /// HTTP), resource updates after `resources/subscribe`.
    pub listen: bool,
}

const MODERN: Features = Features {
    era: Era::Modern,
    default_log_level: None,
    result_type: true,
    cache_hints: true,
    server_info_meta: true,
    titles: true,
    structured_output: true,
    object_only_schemas: false,
    resource_links: true,
    last_modified: true,
    icons: true,
    batches: false,
    version_header_required: true,
    elicitation: ElicitationModes::FormAndUrl,
    url_elicitation_id: false,
    resource_not_found_code: -32602,
    completion_context: true,
    sse_polling: false,
    input_required: true,
    missing_capability_code: -32021,
    tasks: true,
    skills: true,
    discover: true,
    request_meta: true,
    routing_headers: true,
    session_id: false,
    listen: true,
};

const V2025_11_25: Features = Features {
    era: Era::Legacy,
    default_log_level: Some(LoggingLevel::Debug),
    result_type: false,
    cache_hints: false,
    server_info_meta: false,
    titles: true,
    structured_output: true,
    object_only_schemas: true,
    resource_links: true,
    last_modified: true,
    icons: true,
    batches: false,
    version_header_required: true,
    elicitation: ElicitationModes::FormAndUrl,
    url_elicitation_id: true,
    resource_not_found_code: -32002,
    completion_context: true,
    sse_polling: true,
    input_required: false,
    missing_capability_code: -32602,
    tasks: false,
    skills: false,
    discover: false,
    request_meta: false,
    routing_headers: false,
    session_id: true,
    listen: false,
};

const V2025_06_18: Features = Features {
    icons: false,
    elicitation: ElicitationModes::Form,
    sse_polling: false,
    ..V2025_11_25
};

const V2025_03_26: Features = Features {
    titles: false,
    structured_output: false,
    resource_links: false,
    last_modified: false,
    batches: true,
    version_header_required: false,
    elicitation: ElicitationModes::None,
    completion_context: false,
    ..V2025_06_18
};

impl Revision {
    /// How many revisions sake serves.
    pub const COUNT: usize = 4;
    /// Every served revision, newest first.
    pub const ALL: [Revision; Self::COUNT] = [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ];
    /// The handshake revisions, newest first.
    pub const LEGACY: [Revision; 3] = [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ];
    /// The newest revision.
    pub const LATEST: Revision = Revision::ALL[0];
    /// The newest revision served statelessly: what a client probes `server/discover` with.
    pub const LATEST_STATELESS: Revision = Revision::newest(Era::Modern);
    /// The newest handshake revision: the counter-offer to an unknown `initialize` version.
    pub const LATEST_LEGACY: Revision = Revision::newest(Era::Legacy);

    /// The newest revision of an era (the table lists one of each).
    const fn newest(era: Era) -> Revision {
        let mut i = 0;
        while i < Self::COUNT {
            let r = Self::ALL[i];
            let same = matches!(
                (r.features().era, era),
                (Era::Modern, Era::Modern) | (Era::Legacy, Era::Legacy)
            );
            if same {
                return r;
            }
            i += 1;
        }
        Self::ALL[0]
    }

    /// The revision's date string, as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire version string; `None` for anything sake does not serve.
    pub fn parse(s: &str) -> Option<Revision> {
        match s {
            "2025-03-26" => Some(Revision::V2025_03_26),
            "2025-06-18" => Some(Revision::V2025_06_18),
            "2025-11-25" => Some(Revision::V2025_11_25),
            "2026-07-28" => Some(Revision::V2026_07_28),
            _ => None,
        }
    }

    /// The handshake revision `initialize` settles on when a client asks for `requested`: the
    /// same one when sake serves it by handshake, otherwise the newest handshake revision
    /// (the counter-offer the client may accept or refuse).
    pub fn negotiate(requested: &str) -> Revision {
        Revision::parse(requested)
            .filter(|r| r.era() == Era::Legacy)
            .unwrap_or(Revision::LATEST_LEGACY)
    }

    /// Whether `s` names a handshake-era revision, served or not (`2024-11-05` included).
    ///
    /// An `MCP-Protocol-Version` header with such a value never makes a request modern.
    pub fn is_legacy_version_string(s: &str) -> bool {
        Self::is_legacy_version_string_bytes(s.as_bytes())
    }

    /// [`Revision::is_legacy_version_string`] of bytes (a header's value as it came).
    pub(crate) fn is_legacy_version_string_bytes(s: &[u8]) -> bool {
        matches!(
            s,
            b"2024-11-05" | b"2025-03-26" | b"2025-06-18" | b"2025-11-25"
        )
    }

    /// The revision's row of the table.
    pub const fn features(self) -> &'static Features {
        match self {
            Revision::V2025_03_26 => &V2025_03_26,
            Revision::V2025_06_18 => &V2025_06_18,
            Revision::V2025_11_25 => &V2025_11_25,
            Revision::V2026_07_28 => &MODERN,
        }
    }

    /// Handshake or stateless.
    pub const fn era(self) -> Era {
        self.features().era
    }

    /// A dense index (0 for 2025-03-26 … 3 for 2026-07-28), for per-revision tables.
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_revision() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
        assert_eq!(Revision::parse("2024-11-05"), None);
        assert_eq!(Revision::parse("v999.0.0"), None);
    }

    #[test]
    fn table_rows_differ_where_the_spec_says() {
        let f = Revision::V2025_03_26.features();
        assert!(f.batches && !f.titles && !f.structured_output && !f.version_header_required);
        let f = Revision::V2025_06_18.features();
        assert!(!f.batches && f.titles && f.structured_output && !f.icons);
        assert_eq!(f.elicitation, ElicitationModes::Form);
        let f = Revision::V2025_11_25.features();
        assert!(f.icons && f.sse_polling && f.object_only_schemas && !f.result_type);
        let f = Revision::V2026_07_28.features();
        assert!(f.result_type && f.cache_hints && !f.object_only_schemas);
        assert_eq!(f.resource_not_found_code, -32602);
        assert!(f.tasks);
        assert!(Revision::LEGACY.iter().all(|r| !r.features().tasks));
        assert!(f.skills);
        assert!(Revision::LEGACY.iter().all(|r| !r.features().skills));
        assert_eq!(
            Revision::V2025_11_25.features().resource_not_found_code,
            -32002
        );
    }

    #[test]
    fn a_client_reaches_2026_by_discovery_and_the_rest_by_handshake() {
        // (discover, request_meta, routing_headers, session_id, listen, input_required)
        let row = |r: Revision| {
            let f = r.features();
            (
                f.discover,
                f.request_meta,
                f.routing_headers,
                f.session_id,
                f.listen,
                f.input_required,
            )
        };
        assert_eq!(
            row(Revision::V2026_07_28),
            (true, true, true, false, true, true)
        );
        for r in Revision::LEGACY {
            assert_eq!(row(r), (false, false, false, true, false, false), "{r}");
        }
        // The constants a client starts from: it probes the newest revision and, failing
        // that, offers the newest handshake revision.
        assert!(Revision::LATEST_STATELESS.features().discover);
        assert!(!Revision::LATEST_LEGACY.features().discover);
        assert_eq!(Revision::LATEST_STATELESS, Revision::V2026_07_28);
        assert_eq!(Revision::LATEST_LEGACY, Revision::V2025_11_25);
    }

    #[test]
    fn legacy_strings_include_unserved_2024() {
        assert!(Revision::is_legacy_version_string("2024-11-05"));
        assert!(!Revision::is_legacy_version_string("2026-07-28"));
    }
}
