//! The bearer token of the "auth" workload: an HS256 JWT access token for the endpoint at
//! `addr`, signed with the secret the server under test is given.

use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

/// The secret both sides know (`SAKE_BENCH_AUTH_SECRET` of the server).
pub const SECRET: &str = "sake-bench: an HS256 secret, 32 bytes or more, fixed for reruns";

/// The issuer the server trusts (benches/servers/sake/src/common.rs).
const ISSUER: &str = "https://issuer.sake-bench.invalid";

/// A token for `http://<addr>/mcp`, valid for a day.
pub fn bearer(addr: SocketAddr) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = serde_json::json!({"alg": "HS256", "typ": "at+jwt"});
    let claims = serde_json::json!({
        "iss": ISSUER,
        "aud": format!("http://{addr}/mcp"),
        "sub": "bench-user",
        "client_id": "sake-bench",
        "scope": "mcp:tools",
        "iat": now,
        "exp": now + 86_400,
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).expect("any key length");
    mac.update(input.as_bytes());
    format!(
        "{input}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}
