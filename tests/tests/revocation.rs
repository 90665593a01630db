//! Revocation that holds across key rotation: a caller signed out after the session key was
//! rotated loses the sessions it opened under the old key too.

use sake::prelude::*;
use sake_tests::rpc::ok;
use sake_tests::{Handshake, Req, Wire};
use serde_json::json;

#[path = "../fixtures/noop.rs"]
mod noop;

const OLD: &str = "the key of yesterday, 32 bytes or more";
const NEW: &str = "the key of today, also 32 bytes or more";

/// Who the test says the caller is (`Server::principal`).
#[derive(Clone)]
struct Who(&'static str);

fn server(key: &str, previous: &[&str]) -> Server {
    Server::from_registry()
        .name("revocation")
        .version("1.0.0")
        .session_key(key)
        .previous_session_keys(previous.iter().copied())
        .principal(|ext| ext.get::<Who>().map(|w| w.0.to_owned()))
}

fn ping(session: &Handshake, id: i64, who: &'static str) -> Req {
    Req::in_session(
        session,
        json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string(),
    )
    .extension(Who(who))
}

#[tokio::test]
async fn signing_out_after_a_key_rotation_ends_sessions_opened_before_it() {
    let yesterday = Wire::new(server(OLD, &[]));
    let ada = yesterday
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("ada")))
        .await;
    let bob = yesterday
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("bob")))
        .await;
    // The server restarts with a new key, the old one kept to verify: the sessions go on.
    let today = Wire::new(server(NEW, &[OLD]));
    today
        .send_as("2025-11-25", ping(&ada, 1, "ada"))
        .await
        .assert_json(200, ok(1, json!({})));
    // Opened within the second of the sign-out counts as before it: wait for the next.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    today.service().end_sessions_of("ada");
    let reply = today.send_as("2025-11-25", ping(&ada, 2, "ada")).await;
    assert_eq!(reply.status, 404, "{:?}", reply.json(404));
    assert_eq!(reply.json(404)["error"]["code"], -32001);
    // Bob's is not his to lose.
    today
        .send_as("2025-11-25", ping(&bob, 3, "bob"))
        .await
        .assert_json(200, ok(3, json!({})));
    // Ada signs in again (after the second of the sign-out), and is served.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let again = today
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("ada")))
        .await;
    today
        .send_as("2025-11-25", ping(&again, 4, "ada"))
        .await
        .assert_json(200, ok(4, json!({})));
}
