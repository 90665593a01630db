//! Session ids and `requestState`: a token verifies only if this key minted it, for this
//! request and this caller.
//!
//! The first byte picks a mode: (0) fuzzer-chosen text as a session id and as a
//! `requestState` (never accepted); (1) edits to a freshly minted session id (accepted iff
//! the edits changed nothing; never accepted under another key or as a `requestState`);
//! (2) a `requestState` minted for a call, edited (accepted iff unchanged) and replayed for
//! another tool name, other arguments or another caller (never accepted).
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use sake::Revision;
use sake_runtime::internals::Keys;
use serde_json::value::{RawValue, to_raw_value};

static KEYS: LazyLock<Keys> =
    LazyLock::new(|| Keys::new(b"fuzz key: 32 bytes or more, fixed").expect("a non-empty key"));
static OTHER: LazyLock<Keys> =
    LazyLock::new(|| Keys::new(b"another key, also 32 bytes long!").expect("a non-empty key"));

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => arbitrary_text(rest),
        1 => edited_session(rest),
        _ => edited_state(rest),
    }
});

fn as_state(token: &str) -> Box<RawValue> {
    to_raw_value(token).expect("a string is JSON")
}

fn arbitrary_text(rest: &[u8]) {
    let text = String::from_utf8_lossy(rest);
    assert!(!KEYS.verify_session(&text), "forged session id {text:?}");
    assert!(!KEYS.verify_request_state(&as_state(&text), "t", None, None));
    // As raw JSON too (any value in `requestState`).
    if let Ok(raw) = RawValue::from_string(text.into_owned()) {
        assert!(!KEYS.verify_request_state(&raw, "t", None, None));
    }
}

/// Applies edits `[position, operation, byte]*` to a token.
fn edit(token: &str, edits: &[u8]) -> String {
    let mut bytes = token.as_bytes().to_vec();
    for e in edits.chunks_exact(3).take(8) {
        let at = usize::from(e[0]) % (bytes.len() + 1);
        match e[1] % 4 {
            0 if at < bytes.len() => bytes[at] = e[2],
            1 => bytes.insert(at, e[2]),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            3 => bytes.truncate(at),
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn edited_session(rest: &[u8]) {
    let revision = match rest.first().map(|b| b % 3) {
        Some(0) => Revision::V2025_03_26,
        Some(1) => Revision::V2025_06_18,
        _ => Revision::V2025_11_25,
    };
    let Some(token) = KEYS.mint_session(revision) else {
        return;
    };
    assert!(KEYS.verify_session(&token));
    assert!(!OTHER.verify_session(&token));
    assert!(!KEYS.verify_request_state(&as_state(&token), "t", None, None));
    let edited = edit(&token, rest.get(1..).unwrap_or_default());
    assert_eq!(
        KEYS.verify_session(&edited),
        edited == token,
        "edited session id {edited:?} of {token:?}"
    );
}

fn edited_state(rest: &[u8]) {
    // name \0 arguments \0 principal \0 answers \0 edits
    let mut fields = rest.splitn(5, |&b| b == 0);
    let name = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
    let arguments = fields
        .next()
        .and_then(|a| RawValue::from_string(String::from_utf8_lossy(a).into_owned()).ok());
    let principal = fields
        .next()
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let answers = fields
        .next()
        .and_then(|a| RawValue::from_string(String::from_utf8_lossy(a).into_owned()).ok());
    let edits = fields.next().unwrap_or_default();
    let args = arguments.as_deref();
    let who = principal.as_deref();
    let Ok(state) = KEYS.mint_request_state(&name, args, who, answers.as_deref()) else {
        return;
    };
    assert!(KEYS.verify_request_state(&as_state(&state), &name, args, who));
    assert!(!OTHER.verify_request_state(&as_state(&state), &name, args, who));
    assert!(
        !KEYS.verify_session(&state),
        "a requestState accepted as a session id"
    );
    // Another tool, other arguments, another caller.
    assert!(!KEYS.verify_request_state(&as_state(&state), &format!("{name}x"), args, who));
    let other_args = RawValue::from_string(r#"{"fuzz":"other"}"#.to_owned()).expect("JSON");
    // Arguments are compared as JSON values (key order and spacing do not matter).
    let same = |a: &RawValue| serde_json::from_str::<serde_json::Value>(a.get()).ok();
    if args.and_then(same) != same(&other_args) {
        assert!(!KEYS.verify_request_state(&as_state(&state), &name, Some(&other_args), who));
    }
    let other_caller = format!("{}!", who.unwrap_or_default());
    assert!(!KEYS.verify_request_state(&as_state(&state), &name, args, Some(&other_caller)));
    if who.is_some() {
        assert!(!KEYS.verify_request_state(&as_state(&state), &name, args, None));
    }
    let edited = edit(&state, edits);
    assert_eq!(
        KEYS.verify_request_state(&as_state(&edited), &name, args, who),
        edited == state,
        "edited requestState {edited:?} of {state:?}"
    );
}
