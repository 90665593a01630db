//! The MCP HTTP header names and the Base64 sentinel encoding of header values, shared by the
//! server and the client.
//!
//! 2026-07-28, Streamable HTTP, "Standard Headers" (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`), "Custom Headers from Tool Parameters" (`Mcp-Param-{Name}`) and "Value
//! Encoding" (the `=?base64?…?=` sentinel); `Mcp-Session-Id` is the handshake revisions'
//! session header ("Session Management").
//!
//! Also [`CorsHeaders`]: the one place sake writes CORS response headers, for the `Cors` layer
//! (named origins) and for what any page may read (metadata, server cards, the authorization
//! proxy's endpoints).

use std::borrow::Cow;

use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

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

/// The names as `HeaderName`s, prebuilt (a `&str` name is parsed and lowercased by
/// `HeaderMap` on each lookup), for looking one header up alone; the server reads a request's
/// headers in one walk (`RequestHeaders`).
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
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
#[cfg_attr(not(any(feature = "client", feature = "internals")), allow(dead_code))]
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

/// Reads a header as text with surrounding optional whitespace (spaces, tabs) trimmed
/// (2026-07-28, Streamable HTTP, "Server Validation").
///
/// `Ok(None)` when absent; -32020 when it appears more than once (a proxy may route on
/// another line than the one checked), or holds anything but visible ASCII and interior
/// spaces (a tab or a control byte must be sent Base64-encoded).
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn read<'h>(
    headers: &'h http::HeaderMap,
    name: &http::HeaderName,
) -> Result<Option<&'h str>, RpcError> {
    Line::lookup(headers, name).read(name.as_str())
}

/// [`read`], with the header spelled as `display` in messages (`Mcp-Param-*` as declared).
pub fn read_as<'h>(
    headers: &'h http::HeaderMap,
    name: &http::HeaderName,
    display: impl Fn() -> String,
) -> Result<Option<&'h str>, RpcError> {
    Line::lookup(headers, name).read_as(display)
}

/// One header of a request: its first value, and whether another line repeats it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Line<'h> {
    pub first: Option<&'h HeaderValue>,
    pub repeated: bool,
}

impl<'h> Line<'h> {
    /// The line of `name`, looked up in `headers` (for a name [`RequestHeaders`] does not
    /// collect).
    pub fn lookup(headers: &'h HeaderMap, name: &HeaderName) -> Line<'h> {
        let mut values = headers.get_all(name).into_iter();
        Line {
            first: values.next(),
            repeated: values.next().is_some(),
        }
    }

    fn see(&mut self, value: &'h HeaderValue) {
        if self.first.is_none() {
            self.first = Some(value);
        } else {
            self.repeated = true;
        }
    }

    /// The first value as text, if it is text (what `HeaderMap::get` and `to_str` give).
    pub fn str(self) -> Option<&'h str> {
        self.first.and_then(|v| v.to_str().ok())
    }

    /// [`read`] of this line, the header named by its lowercase `name`.
    pub fn read(self, name: &str) -> Result<Option<&'h str>, RpcError> {
        self.read_as(|| display_name(name))
    }

    /// [`read_as`] of this line.
    pub fn read_as(self, display: impl Fn() -> String) -> Result<Option<&'h str>, RpcError> {
        let Some(value) = self.first else {
            return Ok(None);
        };
        if self.repeated {
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
}

/// The headers of a request that the server reads, found in one walk over its map: a
/// lookup hashes the name and probes the map, and a request is checked against about nine
/// of them (admission's `Host`, `Origin`, `Content-Type` and `Content-Length`, the era's version header, the
/// routing headers, the session id). `Mcp-Param-*` names depend on the tool and are looked
/// up in `map` when a tool declares some.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestHeaders<'h> {
    pub map: &'h HeaderMap,
    pub host: Line<'h>,
    pub origin: Line<'h>,
    pub content_type: Line<'h>,
    pub content_length: Line<'h>,
    pub accept: Line<'h>,
    pub protocol_version: Line<'h>,
    pub method: Line<'h>,
    pub name: Line<'h>,
    pub session_id: Line<'h>,
}

impl<'h> RequestHeaders<'h> {
    pub fn new(map: &'h HeaderMap) -> RequestHeaders<'h> {
        let mut h = RequestHeaders {
            map,
            host: Line::default(),
            origin: Line::default(),
            content_type: Line::default(),
            content_length: Line::default(),
            accept: Line::default(),
            protocol_version: Line::default(),
            method: Line::default(),
            name: Line::default(),
            session_id: Line::default(),
        };
        // A map yields each name once, with all of its values one after the other.
        for (name, value) in map {
            let line = match name.as_str() {
                "host" => &mut h.host,
                "origin" => &mut h.origin,
                "content-type" => &mut h.content_type,
                "content-length" => &mut h.content_length,
                "accept" => &mut h.accept,
                PROTOCOL_VERSION => &mut h.protocol_version,
                METHOD => &mut h.method,
                NAME => &mut h.name,
                SESSION_ID => &mut h.session_id,
                _ => continue,
            };
            line.see(value);
        }
        h
    }

    /// Every value of `line`, the line of `name` (`Host` and `Origin`: each value must pass).
    pub fn all(
        &self,
        line: Line<'h>,
        name: &HeaderName,
    ) -> impl Iterator<Item = &'h HeaderValue> + use<'h> {
        let rest = line
            .repeated
            .then(|| self.map.get_all(name).into_iter().skip(1));
        line.first.into_iter().chain(rest.into_iter().flatten())
    }
}

// ---------------------------------------------------------------------------------------------
// `x-mcp-header`: tool arguments mirrored in `Mcp-Param-*` headers

/// The JSON type of an argument mirrored in a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderKind {
    String,
    Integer,
    Boolean,
}

/// An argument mirrored in a header: where it sits in `arguments`, and the header's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    /// Property names from the root of `arguments`.
    pub path: Vec<String>,
    /// `Name` of `Mcp-Param-Name`, as declared.
    pub name: String,
    /// `mcp-param-name`, for lookups.
    pub header: http::HeaderName,
    /// `Mcp-Param-Name`, as declared, for messages.
    pub display: String,
    pub kind: HeaderKind,
}

/// Finds and checks the `x-mcp-header` annotations of an input schema (2026-07-28 tools, `x-mcp-header`): only on
/// string, integer or boolean properties reachable from the root through `properties` alone,
/// token characters, unique regardless of case. An annotation anywhere else in the schema
/// (under `items`, `anyOf`, `$defs`, …) is refused rather than ignored: clients drop such a
/// tool from their lists.
pub(crate) fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, String> {
    /// Keywords whose value is one subschema.
    const ONE: &[&str] = &[
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    ];
    /// Keywords whose value is an array of subschemas.
    const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
    /// Keywords whose value maps names to subschemas (besides `properties`).
    const MAP: &[&str] = &[
        "patternProperties",
        "dependentSchemas",
        "$defs",
        "definitions",
    ];

    /// `reachable`: the path from the root is made of `properties` hops only.
    fn walk(
        schema: &Value,
        path: &mut Vec<String>,
        reachable: bool,
        out: &mut Vec<HeaderParam>,
    ) -> Result<(), String> {
        let Some(obj) = schema.as_object() else {
            return Ok(());
        };
        if let Some(h) = obj.get("x-mcp-header") {
            let at = if path.is_empty() {
                "the schema's root".to_owned()
            } else {
                format!("`{}`", path.join("."))
            };
            let h = h
                .as_str()
                .ok_or_else(|| format!("`x-mcp-header` of {at} is not a string"))?;
            sake_rules::header::check_param_name(h).map_err(|e| format!("`x-mcp-header` {e}"))?;
            if !reachable || path.is_empty() {
                return Err(format!(
                    "`x-mcp-header` {h:?} is on {at}, which is not a property reached from the root through `properties` alone"
                ));
            }
            let kind = match obj.get("type").and_then(Value::as_str) {
                Some("string") => HeaderKind::String,
                Some("integer") => HeaderKind::Integer,
                Some("boolean") => HeaderKind::Boolean,
                _ => {
                    return Err(format!(
                        "`x-mcp-header` {h:?} is on {at}, which is not a string, integer or boolean"
                    ));
                }
            };
            let header = http::HeaderName::try_from(format!("mcp-param-{h}"))
                .map_err(|_| format!("`x-mcp-header` {}", sake_rules::header::InvalidName(h)))?;
            if out
                .iter()
                .any(|p| sake_rules::header::same_name(&p.name, h))
            {
                return Err(format!(
                    "`x-mcp-header` {h:?} is used twice {}",
                    sake_rules::header::CASE_NOTE
                ));
            }
            out.push(HeaderParam {
                path: path.clone(),
                name: h.to_owned(),
                header,
                display: format!("{}{h}", sake_rules::header::PARAM_PREFIX),
                kind,
            });
        }
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                path.push(name.clone());
                walk(prop, path, reachable, out)?;
                path.pop();
            }
        }
        let mut below = |key: &str, sub: &Value, path: &mut Vec<String>| {
            path.push(key.to_owned());
            let r = walk(sub, path, false, out);
            path.pop();
            r
        };
        for key in ONE {
            if let Some(sub) = obj.get(*key).filter(|v| v.is_object()) {
                below(key, sub, path)?;
            }
        }
        for key in MANY {
            if let Some(subs) = obj.get(*key).and_then(Value::as_array) {
                for (i, sub) in subs.iter().enumerate() {
                    below(&format!("{key}[{i}]"), sub, path)?;
                }
            }
        }
        for key in MAP {
            if let Some(subs) = obj.get(*key).and_then(Value::as_object) {
                for (name, sub) in subs {
                    below(&format!("{key}.{name}"), sub, path)?;
                }
            }
        }
        Ok(())
    }
    /// Whether `x-mcp-header` is a key anywhere in `value`: most schemas have none, and this
    /// visit hashes nothing, where `walk` looks up every keyword at every level.
    fn mentions(value: &Value) -> bool {
        match value {
            Value::Object(obj) => obj
                .iter()
                .any(|(key, sub)| key == "x-mcp-header" || mentions(sub)),
            Value::Array(items) => items.iter().any(mentions),
            _ => false,
        }
    }
    let mut out = Vec::new();
    if mentions(schema) {
        walk(schema, &mut Vec::new(), true, &mut out)?;
    }
    Ok(out)
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
    fn one_walk_finds_each_line_and_its_repeats() {
        let mut h = HeaderMap::new();
        h.append("host", HeaderValue::from_static("localhost"));
        h.append(METHOD, HeaderValue::from_static("tools/call"));
        h.append("Host", HeaderValue::from_static("evil.example"));
        h.append(PROTOCOL_VERSION, HeaderValue::from_static(" 2026-07-28 "));
        h.append("x-other", HeaderValue::from_static("x"));
        h.append(METHOD, HeaderValue::from_static("tools/list"));
        let r = RequestHeaders::new(&h);
        let hosts: Vec<_> = r.all(r.host, &http::header::HOST).collect();
        assert_eq!(hosts, ["localhost", "evil.example"]);
        assert!(r.host.repeated && r.method.repeated);
        assert!(!r.protocol_version.repeated);
        assert_eq!(
            r.protocol_version.read(PROTOCOL_VERSION).unwrap(),
            Some("2026-07-28")
        );
        assert_eq!(
            r.method.read(METHOD).unwrap_err().message,
            "Header mismatch: the Mcp-Method header appears more than once; send it once"
        );
        assert!(r.name.first.is_none() && r.session_id.first.is_none());
        assert_eq!(r.name.read(NAME).unwrap(), None);
        assert_eq!(r.all(r.origin, &http::header::ORIGIN).count(), 0);
        // The same verdicts as a lookup of one name.
        for (line, name) in [
            (r.method, &name::METHOD),
            (r.protocol_version, &name::PROTOCOL_VERSION),
            (r.name, &name::NAME),
        ] {
            let walked = line.read(name.as_str()).map_err(|e| e.message);
            assert_eq!(walked, read(&h, name).map_err(|e| e.message));
        }
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

/// The CORS headers of an answer (the Fetch standard's `Access-Control-*`): the one place
/// they are written, whoever grants (the `Cors` layer of the transport for named origins; the
/// protected resource metadata, the server card and the authorization proxy for any origin).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CorsHeaders<'a> {
    /// `Access-Control-Allow-Methods` (a preflight's answer).
    pub methods: Option<&'a str>,
    /// `Access-Control-Allow-Headers` (a preflight's answer).
    pub allow_headers: Option<&'a str>,
    /// `Access-Control-Expose-Headers`: what a page may read of the answer.
    pub expose: Option<&'a str>,
    /// `Access-Control-Max-Age` in seconds (a preflight's answer).
    pub max_age: Option<u64>,
}

impl CorsHeaders<'_> {
    /// Only `Access-Control-Allow-Origin`.
    pub const ORIGIN_ONLY: CorsHeaders<'static> = CorsHeaders {
        methods: None,
        allow_headers: None,
        expose: None,
        max_age: None,
    };

    /// Lets any origin read the answer (`*`: public documents and endpoints that take no
    /// cookie-borne credential).
    pub fn allow_any_origin(&self, headers: &mut HeaderMap) {
        self.allow_origin(HeaderValue::from_static("*"), headers);
    }

    /// Lets `origin` read the answer (the `Cors` layer echoes a named origin).
    pub fn allow_origin(&self, origin: HeaderValue, headers: &mut HeaderMap) {
        use http::header::{
            ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
            ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
        };
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        let text = [
            (ACCESS_CONTROL_ALLOW_METHODS, self.methods),
            (ACCESS_CONTROL_ALLOW_HEADERS, self.allow_headers),
            (ACCESS_CONTROL_EXPOSE_HEADERS, self.expose),
        ];
        for (name, value) in text {
            // A value that is no header value (never one sake writes) is left out.
            if let Some(v) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
                headers.insert(name, v);
            }
        }
        if let Some(age) = self.max_age {
            headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from(age));
        }
    }
}
