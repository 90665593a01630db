//! The 2026-07-28 request headers: reading a header value, the Base64 sentinel, and encoding.
//!
//! Properties: nothing panics; `read` returns trimmed visible ASCII or -32020; every value
//! `encode_value` produces is a valid header value that reads and decodes back to the input
//! (encode then decode is the identity); a decoded sentinel re-encodes to the same text.
#![no_main]

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use sake_runtime::transport::http::headers::{self, NAME};

fuzz_target!(|data: &[u8]| {
    // Whatever bytes a client puts in a header.
    if let Ok(value) = HeaderValue::from_bytes(data) {
        let mut map = HeaderMap::new();
        map.insert(NAME, value);
        match headers::read(&map, &headers::name::NAME) {
            Ok(Some(text)) => {
                assert!(!text.starts_with([' ', '\t']) && !text.ends_with([' ', '\t']));
                match headers::decode_sentinel(NAME, text) {
                    Ok(decoded) => assert_round_trip(&decoded),
                    Err(e) => assert_eq!(e.code, -32020),
                }
            }
            Ok(None) => panic!("a present header read as absent"),
            Err(e) => assert_eq!(e.code, -32020),
        }
    }
    // Any text as a value to send.
    if let Ok(text) = std::str::from_utf8(data) {
        assert_round_trip(text);
        if let Ok(decoded) = headers::decode_sentinel(NAME, text) {
            assert_round_trip(&decoded);
        }
    }
});

/// encode → header → read → decode = identity.
fn assert_round_trip(value: &str) {
    let encoded = headers::encode_value(value);
    let header = HeaderValue::from_str(&encoded).expect("an encoded value is a valid header");
    let mut map = HeaderMap::new();
    map.insert(NAME, header);
    let read = headers::read(&map, &headers::name::NAME)
        .expect("an encoded value reads")
        .expect("present");
    assert_eq!(read, encoded, "reading trimmed an encoded value");
    let decoded = headers::decode_sentinel(NAME, read).expect("an encoded value decodes");
    assert_eq!(decoded, value);
}
