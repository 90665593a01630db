//! The MCP HTTP header names and the Base64 sentinel encoding of header values, shared by the
//! server and the client.
//!
//! 2026-07-28, Streamable HTTP, "Standard Headers" (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`), "Custom Headers from Tool Parameters" (`Mcp-Param-{Name}`) and "Value
//! Encoding" (the `=?base64?…?=` sentinel); `Mcp-Session-Id` is the handshake revisions'
//! session header ("Session Management").

use std::borrow::Cow;

use base64::Engine as _;

use crate::protocol::jsonrpc::RpcError;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";
/// `Mcp-Session-Id` (handshake revisions).
pub const SESSION_ID: &str = "mcp-session-id";
/// The prefix of `Mcp-Param-{Name}`.
pub const PARAM_PREFIX: &str = "mcp-param-";

/// The names looked up on every request, prebuilt: a `&str` name is parsed and lowercased
/// by `HeaderMap` on each lookup.
pub mod name {
    use http::HeaderName;

    /// `MCP-Protocol-Version`.
    pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(super::PROTOCOL_VERSION);
    /// `Mcp-Method`.
    pub const METHOD: HeaderName = HeaderName::from_static(super::METHOD);
    /// `Mcp-Name`.
    pub const NAME: HeaderName = HeaderName::from_static(super::NAME);
    /// `Mcp-Session-Id`.
    pub const SESSION_ID: HeaderName = HeaderName::from_static(super::SESSION_ID);
}

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Decodes a value that may use the Base64 sentinel (`=?base64?…?=`).
///
/// Only an exact lowercase prefix and suffix mark an encoded value; anything else is literal.
/// An encoded value that is not canonical, padded standard Base64 of UTF-8 is -32020.
pub fn decode_sentinel<'v>(header: &str, value: &'v str) -> Result<Cow<'v, str>, RpcError> {
    let Some(inner) = value
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|v| v.strip_suffix(SENTINEL_SUFFIX))
    else {
        return Ok(Cow::Borrowed(value));
    };
    let bad = |why: &str| {
        RpcError::header_mismatch(format!(
            "Header mismatch: the {} header's Base64 value {value:?} {why}",
            display_name(header)
        ))
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .map_err(|_| bad("is not valid padded standard Base64"))?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| bad("does not decode to UTF-8"))
}

/// Encodes a header value as the spec requires: plain when it is visible ASCII with interior
/// spaces only and does not itself look like a sentinel, otherwise `=?base64?…?=`.
pub fn encode_value(value: &str) -> String {
    let visible = value
        .bytes()
        .all(|b| b == b' ' || (0x21..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX);
    let plain_ok = visible && !padded && !looks_encoded;
    if plain_ok {
        value.to_owned()
    } else {
        format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// The spelling of a header in messages.
pub fn display_name(lower: &str) -> String {
    match lower {
        PROTOCOL_VERSION => "MCP-Protocol-Version".to_owned(),
        METHOD => "Mcp-Method".to_owned(),
        NAME => "Mcp-Name".to_owned(),
        SESSION_ID => "Mcp-Session-Id".to_owned(),
        other => match other.strip_prefix(PARAM_PREFIX) {
            Some(rest) => format!("Mcp-Param-{rest}"),
            None => other.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_decoding_follows_the_spec_table() {
        let d = |v: &str| decode_sentinel(NAME, v).map(|c| c.into_owned());
        assert_eq!(d("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
        assert_eq!(d("plain value").unwrap(), "plain value");
        assert_eq!(d("=?BASE64?SGVsbG8=?=").unwrap(), "=?BASE64?SGVsbG8=?=");
        assert_eq!(d("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
        assert_eq!(d("base64?SGVsbG8=?=").unwrap(), "base64?SGVsbG8=?=");
        assert_eq!(d("=?base64??=").unwrap(), "");
        assert_eq!(d("=?base64?SGVsbG8?=").unwrap_err().code, -32020);
        assert_eq!(d("=?base64?SGVs!!!bG8=?=").unwrap_err().code, -32020);
        assert_eq!(d("=?base64?/w==?=").unwrap_err().code, -32020);
    }

    #[test]
    fn encoding_round_trips() {
        for v in [
            "us west 1",
            "Hello, 世界",
            " lead",
            "tail ",
            "a\tb",
            "=?base64?x?=",
            "",
            "x\r\ny",
        ] {
            let e = encode_value(v);
            assert!(e.bytes().all(|b| b == b' ' || (0x21..=0x7e).contains(&b)) || e.is_empty());
            assert_eq!(decode_sentinel(NAME, &e).unwrap(), v);
        }
        assert_eq!(encode_value("us west 1"), "us west 1");
    }

    #[test]
    fn names_are_spelled_as_the_spec_does() {
        assert_eq!(display_name(PROTOCOL_VERSION), "MCP-Protocol-Version");
        assert_eq!(display_name(SESSION_ID), "Mcp-Session-Id");
        assert_eq!(display_name("mcp-param-region"), "Mcp-Param-region");
        assert_eq!(display_name("x-other"), "x-other");
    }
}
