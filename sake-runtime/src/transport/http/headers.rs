//! Reading the MCP headers of a request: a header that appears twice, or holds anything but
//! visible ASCII, is refused (2026-07-28, Streamable HTTP, "Server Validation").
//!
//! The header names and the Base64 sentinel encoding live in the protocol layer, shared with the
//! client.

use http::{HeaderMap, HeaderName};

// Public only with the `internals` feature (fuzz targets, benches); the server names some of
// them only in tests.
#[allow(unused_imports)]
pub use crate::protocol::headers::{
    METHOD, NAME, PARAM_PREFIX, PROTOCOL_VERSION, SESSION_ID, decode_sentinel, display_name,
    encode_value, name,
};
use crate::protocol::jsonrpc::RpcError;

/// Reads a header as text with surrounding optional whitespace (spaces, tabs) trimmed.
///
/// `Ok(None)` when absent; -32020 when it appears more than once (a proxy may route on
/// another line than the one checked), or holds anything but visible ASCII and interior
/// spaces (a tab or a control byte must be sent Base64-encoded).
pub fn read<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h str>, RpcError> {
    read_as(headers, name, || display_name(name.as_str()))
}

/// [`read`], with the header spelled as `display` in messages (`Mcp-Param-*` as declared).
pub fn read_as<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    display: impl Fn() -> String,
) -> Result<Option<&'h str>, RpcError> {
    let mut values = headers.get_all(name).into_iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(RpcError::header_mismatch(format!(
            "Header mismatch: the {} header appears more than once; send it once",
            display()
        )));
    }
    let trimmed = value.as_bytes().trim_ascii();
    if trimmed
        .iter()
        .any(|&b| !(b == b' ' || (0x21..=0x7e).contains(&b)))
    {
        return Err(RpcError::header_mismatch(format!(
            "Header mismatch: the {} header holds characters that are not visible ASCII; encode such values as =?base64?…?=",
            display()
        )));
    }
    // Visible ASCII and spaces only, so this cannot fail.
    Ok(Some(std::str::from_utf8(trimmed).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn reading_trims_and_rejects_non_ascii() {
        let mut h = HeaderMap::new();
        h.insert(NAME, HeaderValue::from_static("  foo \t"));
        assert_eq!(read(&h, &name::NAME).unwrap(), Some("foo"));
        h.insert(NAME, HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap());
        assert_eq!(read(&h, &name::NAME).unwrap_err().code, -32020);
        // A tab is optional whitespace around a value, a control character inside it.
        h.insert(NAME, HeaderValue::from_static("\tus west\t"));
        assert_eq!(read(&h, &name::NAME).unwrap(), Some("us west"));
        h.insert(NAME, HeaderValue::from_static("us\twest"));
        assert_eq!(
            read(&h, &name::NAME).unwrap_err().message,
            "Header mismatch: the Mcp-Name header holds characters that are not visible ASCII; encode such values as =?base64?…?="
        );
        h.insert(NAME, HeaderValue::from_static(" \t "));
        assert_eq!(read(&h, &name::NAME).unwrap(), Some(""));
        // Declared names are looked up case-insensitively and shown as declared.
        h.insert("mcp-param-region", HeaderValue::from_static("a\tb"));
        assert_eq!(
            read_as(&h, &HeaderName::from_static("mcp-param-region"), || {
                "Mcp-Param-Region".to_owned()
            })
            .unwrap_err()
            .message,
            "Header mismatch: the Mcp-Param-Region header holds characters that are not visible ASCII; encode such values as =?base64?…?="
        );
        assert_eq!(read(&h, &name::METHOD).unwrap(), None);
        for bad in [&b"a\tb"[..], b"a\x80b", b"\xff"] {
            h.insert(NAME, HeaderValue::from_bytes(bad).unwrap());
            assert_eq!(read(&h, &name::NAME).unwrap_err().code, -32020, "{bad:?}");
        }
        h.insert(NAME, HeaderValue::from_static("\t a b \t"));
        assert_eq!(read(&h, &name::NAME).unwrap(), Some("a b"));
    }

    #[test]
    fn a_repeated_header_is_refused() {
        let mut h = HeaderMap::new();
        h.append(METHOD, HeaderValue::from_static("tools/call"));
        h.append(METHOD, HeaderValue::from_static("tools/list"));
        let e = read(&h, &name::METHOD).unwrap_err();
        assert_eq!(
            e.message,
            "Header mismatch: the Mcp-Method header appears more than once; send it once"
        );
    }
}
