//! What a development tool asks of a server through its environment (`cargo sake dev`, `cargo
//! sake card`; docs/cli.md). Nothing here runs unless its variable is set.
//!
//! - **`SAKE_PREVIOUS_LISTS`** names a file holding the lists the previous process of this
//!   server served, as `cargo sake schemas` prints them: each revision's `tools`, `prompts`,
//!   `resources` and `resourceTemplates` under its version string, and the same for a client
//!   that declares MCP Apps under `withApps`. A process restarted under the same session key
//!   serves the handshake sessions and `requestState`s of the one before it; what it does not
//!   know is what those clients listed. With this file it does: each kind of list that differs
//!   is announced (`notifications/tools/list_changed`, `…/prompts/…`, `…/resources/…`)
//!   - to each handshake session opened before this process started (before the second it
//!     started in: sessions say when they opened in seconds), once, when it opens its
//!     standalone stream (a client reconnects it after the restart ended it), and
//!   - on each `subscriptions/listen` stream that asks for that kind and opens within
//!     [`LISTEN_WINDOW`] of the start (a 2026-07-28 request carries nothing that tells a
//!     client that listened before the restart from a new one; a new one lists afresh anyway).
//!
//!   A missing file means a first start: nothing is announced.
//! - **`SAKE_WRITE_SERVER_JSON`** names a file the server writes its MCP registry `server.json`
//!   to when it is built ([`Service::registry_server_json`](crate::Service::registry_server_json);
//!   `null` without a listing): `cargo sake card` prints it for any crate without linking it.
//!
//! (And **`SAKE_DEV_APPS`**, which `cargo sake dev` sets to the files of its MCP Apps preview:
//! the HTTP transport reads it, `transport/http/dev_apps.rs`, since it is routes of its own.)

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};

use super::session::{Session, now_secs};
use crate::handler::events::Event;
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{self, RequestId};
use crate::protocol::meta::SUBSCRIPTION_ID;
use crate::registry::Registry;

/// The variable naming the previous process's lists.
pub(crate) const PREVIOUS_LISTS: &str = "SAKE_PREVIOUS_LISTS";
/// The variable naming where to write `server.json`.
pub(crate) const WRITE_SERVER_JSON: &str = "SAKE_WRITE_SERVER_JSON";
/// How long after the start a `subscriptions/listen` stream is told of the lists that changed.
pub(crate) const LISTEN_WINDOW: Duration = Duration::from_secs(120);

/// What this process knows of the one before it.
#[derive(Debug)]
pub(crate) struct Restart {
    /// When this process started (Unix seconds): handshake sessions opened until then are the
    /// previous process's.
    started: u64,
    /// The same, for the listen window.
    started_at: Instant,
    /// The lists that differ from the previous process's, as the events that announce them.
    changed: Vec<Event>,
    /// The sessions told already; cleared when it holds `max` (a session then hears it twice).
    told: Mutex<HashSet<String>>,
    max: usize,
}

/// The lists of one kind of change: the keys of a revision's lists it covers.
const KINDS: [(Event, &[&str]); 3] = [
    (Event::ToolsChanged, &["tools"]),
    (Event::PromptsChanged, &["prompts"]),
    (Event::ResourcesChanged, &["resources", "resourceTemplates"]),
];

/// One revision's list of `key`, for a client with MCP Apps (`apps`) or without.
fn current(registry: &Registry, rev: Revision, key: &str, apps: bool) -> Vec<Value> {
    match (key, apps) {
        ("tools", false) => registry.tools_for(rev),
        ("tools", true) => registry.app_tools_for(rev),
        ("prompts", _) => registry.prompts_for(rev),
        ("resources", false) => registry.resources_for(rev),
        ("resources", true) => registry.app_resources_for(rev),
        _ => registry.templates_for(rev),
    }
}

/// Whether the lists of `keys` differ between `previous` (one audience's document: revisions
/// by version string) and the registry. A revision the document leaves out is not compared; a
/// list it leaves out is an empty one.
fn differs(previous: &Value, registry: &Registry, keys: &[&str], apps: bool) -> bool {
    Revision::ALL.into_iter().any(|rev| {
        let Some(lists) = previous.get(rev.as_str()) else {
            return false;
        };
        keys.iter().any(|key| {
            let before = lists.get(*key).and_then(Value::as_array);
            let now = current(registry, rev, key, apps);
            before.map_or(!now.is_empty(), |b| *b != now)
        })
    })
}

impl Restart {
    /// What `SAKE_PREVIOUS_LISTS` says, compared with this registry; `None` when the variable
    /// is unset or its file missing, unreadable or not such a document (a warning says which).
    pub(crate) fn from_env(registry: &Registry, max_sessions: usize) -> Option<Restart> {
        let path = std::env::var_os(PREVIOUS_LISTS)?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(
                    "{PREVIOUS_LISTS}={}: cannot read it ({e}); no list changes will be announced",
                    path.to_string_lossy()
                );
                return None;
            }
        };
        let previous = match serde_json::from_slice::<Value>(&bytes) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                tracing::warn!(
                    "{PREVIOUS_LISTS}={}: not the lists of a server (a JSON object of revisions, as `cargo sake schemas` prints them); no list changes will be announced",
                    path.to_string_lossy()
                );
                return None;
            }
        };
        Some(Restart::compare(&previous, registry, max_sessions))
    }

    /// The changes between `previous` and the registry, the process starting now.
    pub(crate) fn compare(previous: &Value, registry: &Registry, max_sessions: usize) -> Restart {
        let with_apps = previous.get("withApps");
        let changed: Vec<Event> = KINDS
            .into_iter()
            .filter(|(_, keys)| {
                differs(previous, registry, keys, false)
                    || with_apps.is_some_and(|p| differs(p, registry, keys, true))
            })
            .map(|(event, _)| event)
            .collect();
        if !changed.is_empty() {
            let methods: Vec<&str> = changed.iter().map(Event::method).collect();
            tracing::info!(
                changed = ?methods,
                "lists changed since the previous process: clients of its sessions and listen streams will be told"
            );
        }
        Restart {
            started: now_secs(),
            started_at: Instant::now(),
            changed,
            told: Mutex::new(HashSet::new()),
            max: max_sessions.max(1),
        }
    }

    /// The notifications a session's standalone stream opens with: the lists that changed,
    /// when the session was opened before this process started and has not been told yet.
    /// `lifetime`: the session lifetime, which dates the session's opening from its expiry.
    pub(crate) fn for_session(&self, session: &Session, lifetime: Duration) -> Vec<Bytes> {
        if self.changed.is_empty() {
            return Vec::new();
        }
        // Seconds are what a session says of its opening: one opened in the second this
        // process started counts as this process's (it is not told rather than told twice).
        let opened = session.expires.saturating_sub(lifetime.as_secs());
        if session.expires == 0 || opened >= self.started {
            return Vec::new();
        }
        {
            let mut told = self
                .told
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if told.contains(&session.sid) {
                return Vec::new();
            }
            if told.len() >= self.max {
                told.clear();
            }
            told.insert(session.sid.clone());
        }
        self.changed
            .iter()
            .map(|e| Bytes::from(jsonrpc::notification_bytes(e.method(), &json!({}))))
            .collect()
    }

    /// The notifications a `subscriptions/listen` stream sends after its acknowledgement: the
    /// lists that changed that its filter asks for (`wants`), tagged with its id, while the
    /// process is within [`LISTEN_WINDOW`] of its start.
    pub(crate) fn for_listen(&self, id: &RequestId, wants: impl Fn(&Event) -> bool) -> Vec<Bytes> {
        if self.started_at.elapsed() > LISTEN_WINDOW {
            return Vec::new();
        }
        self.changed
            .iter()
            .filter(|e| wants(e))
            .map(|e| {
                let params = json!({ "_meta": { SUBSCRIPTION_ID: id } });
                Bytes::from(jsonrpc::notification_bytes(e.method(), &params))
            })
            .collect()
    }
}

/// Writes the registry's `server.json` (`doc`; `null` without a listing) to the file
/// `SAKE_WRITE_SERVER_JSON` names, when it is set. A failure is a warning: serving goes on.
pub(crate) fn write_server_json(doc: impl FnOnce() -> Option<Value>) {
    let Some(path) = std::env::var_os(WRITE_SERVER_JSON) else {
        return;
    };
    let doc = doc().unwrap_or(Value::Null);
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    if let Err(e) = std::fs::write(&path, text + "\n") {
        tracing::warn!(
            "{WRITE_SERVER_JSON}={}: cannot write server.json there: {e}",
            path.to_string_lossy()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server with nothing: every list empty.
    fn empty() -> Registry {
        Registry::from_defs([], [], []).unwrap()
    }

    /// The document of `empty()`, with `tools` on the newest revision.
    fn previous(tools: Value) -> Value {
        let mut doc = serde_json::Map::new();
        for rev in Revision::ALL {
            doc.insert(
                rev.as_str().into(),
                json!({"tools": [], "prompts": [], "resources": [], "resourceTemplates": []}),
            );
        }
        doc[Revision::LATEST.as_str()]["tools"] = tools;
        Value::Object(doc)
    }

    fn session(opened: u64) -> Session {
        let mut s = Session::new(Revision::ALL[1], Default::default(), None).unwrap();
        s.expires = opened + 3600;
        s
    }

    const LIFETIME: Duration = Duration::from_secs(3600);

    fn methods(frames: &[Bytes]) -> Vec<Value> {
        frames
            .iter()
            .map(|f| serde_json::from_slice(f).unwrap())
            .collect()
    }

    #[test]
    fn the_same_lists_announce_nothing() {
        let restart = Restart::compare(&previous(json!([])), &empty(), 8);
        assert!(restart.changed.is_empty());
        assert!(
            restart
                .for_session(&session(now_secs() - 60), LIFETIME)
                .is_empty()
        );
        assert!(
            restart
                .for_listen(&RequestId::Number(1), |_| true)
                .is_empty()
        );
        // Revisions and lists the document leaves out are not compared, or empty.
        let restart = Restart::compare(&json!({}), &empty(), 8);
        assert!(restart.changed.is_empty());
        let restart = Restart::compare(&json!({"2025-11-25": {}}), &empty(), 8);
        assert!(restart.changed.is_empty());
    }

    #[test]
    fn a_session_of_the_previous_process_is_told_once() {
        let restart = Restart::compare(&previous(json!([{"name": "gone"}])), &empty(), 8);
        assert_eq!(restart.changed, [Event::ToolsChanged]);
        let old = session(now_secs() - 60);
        assert_eq!(
            methods(&restart.for_session(&old, LIFETIME)),
            [json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}})]
        );
        assert!(restart.for_session(&old, LIFETIME).is_empty(), "told once");
        // A session this process opened saw its lists (one opened in its first second too).
        assert!(
            restart
                .for_session(&session(now_secs() + 5), LIFETIME)
                .is_empty()
        );
        assert!(
            restart
                .for_session(&session(restart.started), LIFETIME)
                .is_empty()
        );
    }

    #[test]
    fn the_set_of_sessions_told_is_bounded() {
        let restart = Restart::compare(&previous(json!([{"name": "gone"}])), &empty(), 2);
        let sessions: Vec<Session> = (0..3).map(|_| session(now_secs() - 60)).collect();
        for s in &sessions {
            assert_eq!(restart.for_session(s, LIFETIME).len(), 1);
        }
        assert!(restart.told.lock().unwrap().len() <= 2);
    }

    #[test]
    fn listen_streams_hear_what_they_asked_for_tagged() {
        let mut doc = previous(json!([{"name": "gone"}]));
        doc["withApps"] = json!({"2025-06-18": {"resources": [{"uri": "ui://gone"}]}});
        let restart = Restart::compare(&doc, &empty(), 8);
        assert_eq!(
            restart.changed,
            [Event::ToolsChanged, Event::ResourcesChanged]
        );
        let id = RequestId::Number(7);
        assert_eq!(
            methods(&restart.for_listen(&id, |e| *e == Event::ResourcesChanged)),
            [
                json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 7}}})
            ]
        );
        assert!(restart.for_listen(&id, |_| false).is_empty());
    }
}
