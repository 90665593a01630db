//! Revocation that holds: a caller signed out after the session key was rotated loses the
//! sessions it opened under the old key too; a sign-out ends the caller's running requests
//! and open streams, and no one else's.

use std::sync::Arc;
use std::time::Duration;

use sake::prelude::*;
use sake_tests::rpc::ok;
use sake_tests::{Handshake, Req, Wire};
use serde_json::json;

/// Works for an hour.
#[tool]
async fn wait_long() -> String {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    "done".to_owned()
}

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

#[tokio::test]
async fn a_sign_out_ends_the_callers_running_requests_and_open_streams() {
    let w = Arc::new(Wire::new(server(NEW, &[])));
    let listen = |id: i64, who: &'static str| {
        Req::modern(
            id,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .extension(Who(who))
    };
    let call = |id: i64, who: &'static str| {
        let w = w.clone();
        tokio::spawn(async move {
            w.send(
                Req::modern(
                    id,
                    "tools/call",
                    json!({"name": "wait_long", "arguments": {}}),
                )
                .extension(Who(who)),
            )
            .await
        })
    };
    // Ada: a running call, a listen stream, a session's GET stream. Bob: the same.
    let ada_call = call(1, "ada");
    let bob_call = call(2, "bob");
    let mut ada_listen = w.open(listen(3, "ada")).await;
    let mut bob_listen = w.open(listen(4, "bob")).await;
    for s in [&mut ada_listen, &mut bob_listen] {
        assert_eq!(
            s.message().await["method"],
            "notifications/subscriptions/acknowledged"
        );
    }
    let ada = w
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("ada")))
        .await;
    let get = |session: &Handshake, who: &'static str| {
        Req::get()
            .header("mcp-session-id", &session.id)
            .header("mcp-protocol-version", "2025-11-25")
            .extension(Who(who))
    };
    let mut ada_get = w.open(get(&ada, "ada")).await;
    assert_eq!(ada_get.status, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;

    w.service().end_sessions_of("ada");

    // Ada's call ends with the refusal, her listen stream with its closing result, her GET
    // stream closes.
    let reply = tokio::time::timeout(Duration::from_secs(5), ada_call)
        .await
        .expect("the call ended")
        .unwrap();
    reply.assert_json(
        403,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message":
            "Unauthorized: the caller was signed out while the request ran; sign in again"}}),
    );
    assert_eq!(
        ada_listen.message().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 3,
                "io.modelcontextprotocol/serverInfo": {"name": "revocation", "version": "1.0.0"}}}})
    );
    ada_listen.assert_end().await;
    tokio::time::timeout(Duration::from_secs(5), ada_get.assert_end())
        .await
        .expect("the GET stream ended");
    // Bob's go on.
    bob_listen
        .assert_quiet_for(Duration::from_millis(200))
        .await;
    assert!(!bob_call.is_finished());
    bob_call.abort();
}
