//! Request parameters common to all methods, and the `_meta` keys of 2026-07-28.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::jsonrpc::{RequestId, RpcError};
use super::types::{ClientCapabilities, Implementation, LoggingLevel};

/// `_meta` key: the revision a 2026-07-28 request speaks.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest level of `notifications/message` the request wants.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on results: the server's name and version.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on listen-stream notifications: the listen request's id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A progress token: a string or an integer, like a request id.
pub type ProgressToken = RequestId;

/// The parameters of any request, each kept raw until the method needs it.
///
/// One pass over the JSON finds every field a method may use; a field of the wrong type is
/// reported by the method that reads it, naming the field.
#[derive(Debug, Default, Deserialize)]
pub struct Params<'a> {
    /// `_meta`.
    #[serde(rename = "_meta", borrow, default)]
    pub meta: Option<&'a RawValue>,
    /// `name` (tools/call, prompts/get).
    #[serde(borrow, default)]
    pub name: Option<&'a RawValue>,
    /// `uri` (resources/read, subscribe).
    #[serde(borrow, default)]
    pub uri: Option<&'a RawValue>,
    /// `arguments` (tools/call, prompts/get).
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
    /// `cursor` (lists).
    #[serde(borrow, default)]
    pub cursor: Option<&'a RawValue>,
    /// `inputResponses` (MRTR retries); a `null` is kept, to be refused.
    #[serde(
        rename = "inputResponses",
        borrow,
        default,
        deserialize_with = "crate::protocol::jsonrpc::present"
    )]
    pub input_responses: Option<&'a RawValue>,
    /// `requestState` (MRTR retries); a `null` is kept, to be refused.
    #[serde(
        rename = "requestState",
        borrow,
        default,
        deserialize_with = "crate::protocol::jsonrpc::present"
    )]
    pub request_state: Option<&'a RawValue>,
    /// `ref` (completion/complete).
    #[serde(rename = "ref", borrow, default)]
    pub reference: Option<&'a RawValue>,
    /// `argument` (completion/complete).
    #[serde(borrow, default)]
    pub argument: Option<&'a RawValue>,
    /// `context` (completion/complete).
    #[serde(borrow, default)]
    pub context: Option<&'a RawValue>,
    /// `level` (logging/setLevel).
    #[serde(borrow, default)]
    pub level: Option<&'a RawValue>,
    /// `protocolVersion` (initialize).
    #[serde(rename = "protocolVersion", borrow, default)]
    pub protocol_version: Option<&'a RawValue>,
    /// `capabilities` (initialize).
    #[serde(borrow, default)]
    pub capabilities: Option<&'a RawValue>,
    /// `clientInfo` (initialize).
    #[serde(rename = "clientInfo", borrow, default)]
    pub client_info: Option<&'a RawValue>,
    /// `notifications` (subscriptions/listen).
    #[serde(borrow, default)]
    pub notifications: Option<&'a RawValue>,
    /// `requestId` (notifications/cancelled).
    #[serde(rename = "requestId", borrow, default)]
    pub request_id: Option<&'a RawValue>,
}

impl<'a> Params<'a> {
    /// Reads the params of a request; absent params read as empty.
    pub fn parse(raw: Option<&'a RawValue>) -> Result<Self, RpcError> {
        match raw {
            None => Ok(Params::default()),
            // serde reads a struct from an array too (by position): refuse that first.
            Some(raw) if !raw.get().starts_with('{') => Err(RpcError::invalid_params(format!(
                "Invalid params: `params` must be a JSON object, not {}",
                clip(raw.get())
            ))),
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                RpcError::invalid_params(format!(
                    "Invalid params: `params` must be a JSON object: {e}"
                ))
            }),
        }
    }

    /// A required string field.
    pub fn required_str(field: Option<&'a RawValue>, name: &str) -> Result<String, RpcError> {
        match field {
            None => Err(RpcError::invalid_params(format!(
                "missing required parameter `{name}`"
            ))),
            Some(raw) => serde_json::from_str::<String>(raw.get()).map_err(|_| {
                RpcError::invalid_params(format!(
                    "parameter `{name}` must be a string, not {}",
                    clip(raw.get())
                ))
            }),
        }
    }

    /// An optional string field.
    pub fn optional_str(
        field: Option<&'a RawValue>,
        name: &str,
    ) -> Result<Option<String>, RpcError> {
        match field {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            some => Self::required_str(some, name).map(Some),
        }
    }
}

/// Shortens raw JSON for an error message.
pub(crate) fn clip(s: &str) -> String {
    const MAX: usize = 60;
    if s.len() <= MAX {
        s.to_owned()
    } else {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow, default)]
    client_info: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow, default)]
    log_level: Option<&'a RawValue>,
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
}

/// What a request's `_meta` says about it.
#[derive(Clone, Debug, Default)]
pub struct RequestMeta {
    /// The client's capabilities (from `_meta` in 2026-07-28, from `initialize` on legacy).
    pub client_capabilities: ClientCapabilities,
    /// The client's name and version, when given.
    pub client_info: Option<Implementation>,
    /// The lowest log level the request (2026-07-28) or the session (legacy) wants.
    pub log_level: Option<LoggingLevel>,
    /// The progress token, when the client asked for progress.
    pub progress_token: Option<ProgressToken>,
    /// The whole `_meta` object, as sent.
    pub raw: Option<Box<RawValue>>,
}

/// The modern `_meta` of a request, read and checked (digest A2).
#[derive(Debug)]
pub struct ModernMeta {
    /// The `protocolVersion` as sent.
    pub protocol_version: String,
    /// Everything else.
    pub meta: RequestMeta,
}

const META_HELP: &str = "2026-07-28 requests carry `params._meta` with \
`io.modelcontextprotocol/protocolVersion` (a string) and \
`io.modelcontextprotocol/clientCapabilities` (an object)";

/// Reads and checks the `_meta` of a 2026-07-28 request. Every failure is -32602 with HTTP 400.
pub fn parse_modern_meta(raw: Option<&RawValue>) -> Result<ModernMeta, RpcError> {
    let Some(raw) = raw else {
        return Err(RpcError::invalid_meta(format!(
            "Invalid params: missing `_meta`; {META_HELP}"
        )));
    };
    let not_object = || {
        RpcError::invalid_meta(format!(
            "Invalid params: `_meta` must be an object; {META_HELP}"
        ))
    };
    // serde reads a struct from an array too (by position): refuse that first.
    if !raw.get().starts_with('{') {
        return Err(not_object());
    }
    let fields: RawMeta<'_> = serde_json::from_str(raw.get()).map_err(|_| not_object())?;
    let protocol_version = match fields.protocol_version {
        None => {
            return Err(RpcError::invalid_meta(format!(
                "Invalid params: missing `_meta[\"{PROTOCOL_VERSION}\"]`; {META_HELP}"
            )));
        }
        Some(v) => serde_json::from_str::<String>(v.get()).map_err(|_| {
            RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{PROTOCOL_VERSION}\"]` must be a string"
            ))
        })?,
    };
    let client_capabilities = match fields.client_capabilities {
        None => {
            return Err(RpcError::invalid_meta(format!(
                "Invalid params: missing `_meta[\"{CLIENT_CAPABILITIES}\"]` (send {{}} for none); {META_HELP}"
            )));
        }
        Some(v) if !v.get().starts_with('{') => {
            return Err(RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_CAPABILITIES}\"]` must be an object"
            )));
        }
        Some(v) => serde_json::from_str::<ClientCapabilities>(v.get()).map_err(|e| {
            RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_CAPABILITIES}\"]` is not a valid ClientCapabilities object: {e}"
            ))
        })?,
    };
    let client_info = match fields.client_info {
        None => None,
        Some(v) if !v.get().starts_with('{') => {
            return Err(RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_INFO}\"]` must be an object with `name` and `version`"
            )));
        }
        Some(v) => Some(serde_json::from_str::<Implementation>(v.get()).map_err(|e| {
            RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_INFO}\"]` must be an object with `name` and `version`: {e}"
            ))
        })?),
    };
    let log_level = match fields.log_level {
        None => None,
        Some(v) => Some(
            serde_json::from_str::<String>(v.get())
                .ok()
                .and_then(|s| LoggingLevel::parse(&s))
                .ok_or_else(|| {
                    RpcError::invalid_meta(format!(
                        "Invalid params: `_meta[\"{LOG_LEVEL}\"]` must be one of debug, info, notice, warning, error, critical, alert, emergency; got {}",
                        clip(v.get())
                    ))
                })?,
        ),
    };
    let progress_token = parse_progress_token(fields.progress_token)?;
    Ok(ModernMeta {
        protocol_version,
        meta: RequestMeta {
            client_capabilities,
            client_info,
            log_level,
            progress_token,
            raw: Some(raw.to_owned()),
        },
    })
}

/// Reads the progress token of a legacy request's `_meta`; the rest of it is kept raw.
pub fn parse_legacy_meta(
    raw: Option<&RawValue>,
) -> Result<(Option<ProgressToken>, Option<Box<RawValue>>), RpcError> {
    let Some(raw) = raw else {
        return Ok((None, None));
    };
    let not_object = || RpcError::invalid_params("Invalid params: `_meta` must be an object");
    if !raw.get().starts_with('{') {
        return Err(not_object());
    }
    let fields: RawMeta<'_> = serde_json::from_str(raw.get()).map_err(|_| not_object())?;
    Ok((
        parse_progress_token(fields.progress_token)?,
        Some(raw.to_owned()),
    ))
}

fn parse_progress_token(raw: Option<&RawValue>) -> Result<Option<ProgressToken>, RpcError> {
    match raw {
        None => Ok(None),
        Some(v) => serde_json::from_str::<ProgressToken>(v.get())
            .map(Some)
            .map_err(|_| {
                RpcError::invalid_meta(format!(
                    "Invalid params: `_meta.progressToken` must be a string or an integer, not {}",
                    clip(v.get())
                ))
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn reads_a_complete_meta() {
        let r = raw(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},
                "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
                "io.modelcontextprotocol/logLevel":"info","progressToken":"p1"}"#);
        let m = parse_modern_meta(Some(&r)).unwrap();
        assert_eq!(m.protocol_version, "2026-07-28");
        assert!(m.meta.client_capabilities.elicitation.is_some());
        assert_eq!(m.meta.client_info.unwrap().name, "c");
        assert_eq!(m.meta.log_level, Some(LoggingLevel::Info));
        assert_eq!(m.meta.progress_token, Some(RequestId::from("p1")));
    }

    #[test]
    fn every_missing_or_malformed_field_is_a_400_invalid_params() {
        let cases = [
            None,
            Some(raw("[]")),
            Some(raw(r#"{"io.modelcontextprotocol/clientCapabilities":{}}"#)),
            Some(raw(
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
            )),
            Some(raw(
                r#"{"io.modelcontextprotocol/protocolVersion":5,"io.modelcontextprotocol/clientCapabilities":{}}"#,
            )),
            Some(raw(
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
            )),
            Some(raw(
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}"#,
            )),
            Some(raw(
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1.5}"#,
            )),
            Some(raw(
                r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":1}}"#,
            )),
        ];
        for case in cases {
            let e = parse_modern_meta(case.as_deref()).unwrap_err();
            assert_eq!(e.code, -32602, "{e}");
            assert_eq!(e.http_status(crate::protocol::Era::Modern), 400, "{e}");
        }
    }

    #[test]
    fn arrays_are_not_read_as_objects_by_position() {
        // serde would read these positionally into the structs' fields.
        let meta = raw(r#"["2026-07-28", {}]"#);
        let e = parse_modern_meta(Some(&meta)).unwrap_err();
        assert_eq!(
            (e.code, e.http_status(crate::protocol::Era::Modern)),
            (-32602, 400)
        );
        assert!(
            e.message
                .starts_with("Invalid params: `_meta` must be an object")
        );
        assert!(parse_legacy_meta(Some(&raw(r#"[1]"#))).is_err());
        let info = raw(
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":["c","1"]}"#,
        );
        assert_eq!(parse_modern_meta(Some(&info)).unwrap_err().code, -32602);
        let params = raw(r#"[{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}]"#);
        let e = Params::parse(Some(&params)).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(Params::parse(Some(&raw("{}"))).is_ok());
    }

    #[test]
    fn client_info_is_optional() {
        let r = raw(
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
        );
        assert!(
            parse_modern_meta(Some(&r))
                .unwrap()
                .meta
                .client_info
                .is_none()
        );
    }
}
