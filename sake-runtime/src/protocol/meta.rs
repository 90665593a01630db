//! Request parameters common to all methods, and the `_meta` keys of 2026-07-28.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::jsonrpc::{RequestId, RpcError, clip};
use super::types::{ClientCapabilities, Icon, Implementation, LoggingLevel};

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

/// `_meta` key on a question sake's server asks on a handshake session (elicitation,
/// sampling, roots): the key the function named it with, which a 2026-07-28 round would
/// carry in `inputRequests`. A gateway in front of the server keys the question with it
/// when it asks a 2026-07-28 client (docs/composition.md, "The era bridge").
pub const INPUT_KEY: &str = "io.github.sake-rs/inputKey";

/// A progress token: a string or an integer, like a request id.
pub type ProgressToken = RequestId;

/// The parameters of any request, each kept raw until the method needs it.
///
/// One pass over the JSON finds every field a method may use; a field of the wrong type is
/// reported by the method that reads it, naming the field.
///
/// `M` is how `_meta` is read: raw (the default), or, on the 2026-07-28 fast path, as its
/// fields in the same pass (see [`decode_modern_request`]).
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "M: Deserialize<'de>"))]
pub struct Params<'a, M = &'a RawValue> {
    /// `_meta`.
    #[serde(rename = "_meta", default)]
    pub meta: Option<M>,
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
    /// `taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`: the tasks extension).
    #[serde(rename = "taskId", borrow, default)]
    pub task_id: Option<&'a RawValue>,
}

impl<M> Default for Params<'_, M> {
    fn default() -> Self {
        Params {
            meta: None,
            name: None,
            uri: None,
            arguments: None,
            cursor: None,
            input_responses: None,
            request_state: None,
            reference: None,
            argument: None,
            context: None,
            level: None,
            protocol_version: None,
            capabilities: None,
            client_info: None,
            notifications: None,
            request_id: None,
            task_id: None,
        }
    }
}

impl<'a, M> Params<'a, M> {
    /// Takes `_meta` out, leaving the other fields (and no raw `_meta`).
    fn take_meta(self) -> (Option<M>, Params<'a>) {
        let Params {
            meta,
            name,
            uri,
            arguments,
            cursor,
            input_responses,
            request_state,
            reference,
            argument,
            context,
            level,
            protocol_version,
            capabilities,
            client_info,
            notifications,
            request_id,
            task_id,
        } = self;
        let rest = Params {
            meta: None,
            name,
            uri,
            arguments,
            cursor,
            input_responses,
            request_state,
            reference,
            argument,
            context,
            level,
            protocol_version,
            capabilities,
            client_info,
            notifications,
            request_id,
            task_id,
        };
        (meta, rest)
    }
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
}

/// `_meta`'s fields. `I` is how `clientInfo` is read: raw, to be checked with a message that
/// says what is wrong (the careful path), or checked in the same pass (the one-pass reader,
/// whose failures go to the careful path).
#[derive(Deserialize)]
#[serde(bound(deserialize = "I: Deserialize<'de>"))]
struct MetaFields<'a, I = &'a RawValue> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    client_info: Option<I>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow, default)]
    log_level: Option<&'a RawValue>,
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
}

/// What a request's `_meta` says about it.
#[derive(Clone, Debug, Default)]
pub struct RequestMeta {
    /// The client's capabilities (from `_meta` in 2026-07-28, from `initialize` on legacy).
    /// Shared: a session's requests all carry the capabilities of its `initialize`.
    pub client_capabilities: Arc<ClientCapabilities>,
    /// The client's name and version, when given.
    pub client_info: ClientInfo,
    /// The lowest log level the request (2026-07-28) or the session (legacy) wants.
    pub log_level: Option<LoggingLevel>,
    /// The progress token, when the client asked for progress.
    pub progress_token: Option<ProgressToken>,
    /// The whole `_meta` object, as sent.
    pub raw: RawMeta,
}

/// The client's name and version: checked when the request is read, but built into an
/// [`Implementation`] (owned strings) only when something asks for it
/// ([`Context::client_info`](crate::Context::client_info), a task's record); most requests
/// never do.
#[derive(Clone, Debug, Default)]
pub struct ClientInfo {
    /// Where the checked object is, until it is read.
    raw: Option<InfoSource>,
    /// Boxed: the request's metadata is moved from layer to layer, and an `Implementation`
    /// inline would be most of its size.
    cell: OnceLock<Option<Box<Implementation>>>,
}

/// Where a checked `clientInfo` is.
#[derive(Clone, Debug)]
enum InfoSource {
    /// The object itself.
    Object(Bytes),
    /// In `params._meta` of these request bytes (kept for the request anyway).
    Message(Bytes),
    /// Already made, and shared (a handshake session's, from its `initialize`).
    Shared(Arc<Implementation>),
}

impl ClientInfo {
    /// A name and version already read (or none).
    pub fn known(info: Option<Implementation>) -> Self {
        ClientInfo {
            raw: None,
            cell: OnceLock::from(info.map(Box::new)),
        }
    }

    /// A name and version made before, shared (or none).
    pub(crate) fn shared(info: Option<Arc<Implementation>>) -> Self {
        ClientInfo {
            raw: info.map(InfoSource::Shared),
            cell: OnceLock::new(),
        }
    }

    /// The client's name and version, if it gave them.
    pub fn get(&self) -> Option<&Implementation> {
        if let Some(InfoSource::Shared(info)) = &self.raw {
            return Some(info);
        }
        self.cell
            .get_or_init(|| match self.raw.as_ref()? {
                InfoSource::Object(raw) => serde_json::from_slice(raw).ok().map(Box::new),
                InfoSource::Message(message) => info_of_message(message).map(Box::new),
                InfoSource::Shared(_) => None,
            })
            .as_deref()
    }
}

/// What `Implementation` accepts, read without building it: the strings borrowed from the
/// request where they have no escapes. The test `client_info_checks_as_implementation_reads`
/// holds the two to the same verdicts.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // read only to be checked
struct ImplementationCheck<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    version: Cow<'a, str>,
    #[serde(borrow, default)]
    title: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    description: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    website_url: Option<Cow<'a, str>>,
    #[serde(default)]
    icons: Option<Vec<Icon>>,
}

/// How `clientInfo` reaches [`check_modern_meta`].
trait ClientInfoField {
    /// Checks it; `raw` is the `_meta` it came from.
    fn check(self, raw: &RawMeta) -> Result<InfoSource, RpcError>;
}

/// Raw: checked here, every failure said.
impl ClientInfoField for &RawValue {
    fn check(self, _: &RawMeta) -> Result<InfoSource, RpcError> {
        if !self.get().starts_with('{') {
            return Err(RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_INFO}\"]` must be an object with `name` and `version`"
            )));
        }
        serde_json::from_str::<ImplementationCheck<'_>>(self.get()).map_err(|e| {
            RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_INFO}\"]` must be an object with `name` and `version`: {e}"
            ))
        })?;
        Ok(InfoSource::Object(Bytes::copy_from_slice(
            self.get().as_bytes(),
        )))
    }
}

/// A `clientInfo` checked while the request was read (an object, the same
/// `ImplementationCheck`) and not kept: what was read is dropped at once, so the request
/// being read (moved several times on its way out of serde) does not carry it.
struct InfoChecked;

impl<'de> Deserialize<'de> for InfoChecked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ObjectOnly::<ImplementationCheck<'de>>::deserialize(d).map(|_| InfoChecked)
    }
}

/// Checked while the request was read: found again in the request's bytes if something asks
/// for it.
impl ClientInfoField for InfoChecked {
    fn check(self, raw: &RawMeta) -> Result<InfoSource, RpcError> {
        raw.message()
            .cloned()
            .map(InfoSource::Message)
            .ok_or_else(|| {
                RpcError::internal("a clientInfo read in one pass without its request's bytes")
            })
    }
}

/// `params._meta`'s `clientInfo` of a request that passed the one-pass reader.
fn info_of_message(message: &[u8]) -> Option<Implementation> {
    #[derive(Deserialize)]
    struct Message {
        params: InfoParams,
    }
    #[derive(Deserialize)]
    struct InfoParams {
        #[serde(rename = "_meta")]
        meta: InfoMeta,
    }
    #[derive(Deserialize)]
    struct InfoMeta {
        #[serde(rename = "io.modelcontextprotocol/clientInfo")]
        info: Implementation,
    }
    serde_json::from_slice::<Message>(message)
        .ok()
        .map(|m| m.params.meta.info)
}

/// A request's whole `_meta` object, as sent.
///
/// The 2026-07-28 HTTP path reads `_meta`'s fields in the same pass as the rest of the request
/// and keeps the request's bytes (a reference count, not a copy); the object itself is cut
/// out of them only when something asks for it ([`Context::meta`](crate::Context::meta)).
#[derive(Clone, Debug, Default)]
pub struct RawMeta {
    message: Option<Bytes>,
    cell: OnceLock<Option<Box<RawValue>>>,
}

impl RawMeta {
    /// A `_meta` already cut out (or none).
    pub fn new(raw: Option<Box<RawValue>>) -> Self {
        RawMeta {
            message: None,
            cell: OnceLock::from(raw),
        }
    }

    /// The `_meta` of the JSON-RPC request `message`, read when first asked for.
    pub(crate) fn of_message(message: Bytes) -> Self {
        RawMeta {
            message: Some(message),
            cell: OnceLock::new(),
        }
    }

    /// The bytes of the request this `_meta` is read from, when they were kept.
    pub(crate) fn message(&self) -> Option<&Bytes> {
        self.message.as_ref()
    }

    /// The object, if the request had one.
    pub fn get(&self) -> Option<&RawValue> {
        self.cell
            .get_or_init(|| self.message.as_deref().and_then(meta_of_message))
            .as_deref()
    }
}

/// Cuts `params._meta` out of a request's bytes.
fn meta_of_message(message: &[u8]) -> Option<Box<RawValue>> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        params: Option<OnlyMeta<'a>>,
    }
    #[derive(Deserialize)]
    struct OnlyMeta<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    let message: Message<'_> = serde_json::from_slice(message).ok()?;
    message.params?.meta.map(ToOwned::to_owned)
}

/// Whether a request's `_meta` names a protocol version: what makes a request stateless
/// (2026-07-28) on every transport, whatever else it carries.
pub(crate) fn names_version(meta: Option<&RawValue>) -> bool {
    #[derive(Deserialize)]
    struct VersionOnly<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
        version: Option<&'a RawValue>,
    }
    meta.and_then(|m| serde_json::from_str::<VersionOnly<'_>>(m.get()).ok())
        .is_some_and(|v| v.version.is_some())
}

/// The modern `_meta` of a request, read and checked (2026-07-28 Base Protocol, `_meta` "Per-request protocol fields").
#[derive(Debug)]
pub struct ModernMeta<'a> {
    /// The `protocolVersion` as sent.
    pub protocol_version: Cow<'a, str>,
    /// Everything else.
    pub meta: RequestMeta,
}

const META_HELP: &str = "2026-07-28 requests carry `params._meta` with \
`io.modelcontextprotocol/protocolVersion` (a string) and \
`io.modelcontextprotocol/clientCapabilities` (an object)";

/// Reads and checks the `_meta` of a 2026-07-28 request. Every failure is -32602 with HTTP 400.
pub fn parse_modern_meta(raw: Option<&RawValue>) -> Result<ModernMeta<'_>, RpcError> {
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
    let fields: MetaFields<'_> = serde_json::from_str(raw.get()).map_err(|_| not_object())?;
    check_modern_meta(fields, RawMeta::new(Some(raw.to_owned())))
}

/// Checks `_meta`'s fields (2026-07-28 Base Protocol, `_meta` "Per-request protocol fields"); `raw` is the object they came from.
fn check_modern_meta<'a, I: ClientInfoField>(
    fields: MetaFields<'a, I>,
    raw: RawMeta,
) -> Result<ModernMeta<'a>, RpcError> {
    let protocol_version = match fields.protocol_version {
        None => {
            return Err(RpcError::invalid_meta(format!(
                "Invalid params: missing `_meta[\"{PROTOCOL_VERSION}\"]`; {META_HELP}"
            )));
        }
        Some(v) => super::jsonrpc::raw_string(v).ok_or_else(|| {
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
        Some(v) if v.get() == "{}" => no_capabilities(),
        Some(v) => Arc::new(serde_json::from_str::<ClientCapabilities>(v.get()).map_err(|e| {
            RpcError::invalid_meta(format!(
                "Invalid params: `_meta[\"{CLIENT_CAPABILITIES}\"]` is not a valid ClientCapabilities object: {e}"
            ))
        })?),
    };
    let client_info = match fields.client_info {
        None => None,
        Some(v) => Some(v.check(&raw)?),
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
            client_info: ClientInfo {
                raw: client_info,
                cell: OnceLock::new(),
            },
            log_level,
            progress_token,
            raw,
        },
    })
}

/// The capabilities of a client that declares none (`{}`, what most requests send), shared
/// instead of read and allocated for each request.
fn no_capabilities() -> Arc<ClientCapabilities> {
    static NONE: OnceLock<Arc<ClientCapabilities>> = OnceLock::new();
    NONE.get_or_init(Arc::default).clone()
}

/// Reads the progress token of a legacy request's `_meta`; the rest of it is kept raw.
pub fn parse_legacy_meta(
    raw: Option<&RawValue>,
) -> Result<(Option<ProgressToken>, RawMeta), RpcError> {
    let Some(raw) = raw else {
        return Ok((None, RawMeta::default()));
    };
    let not_object = || RpcError::invalid_params("Invalid params: `_meta` must be an object");
    if !raw.get().starts_with('{') {
        return Err(not_object());
    }
    let fields: MetaFields<'_> = serde_json::from_str(raw.get()).map_err(|_| not_object())?;
    Ok((
        parse_progress_token(fields.progress_token)?,
        RawMeta::new(Some(raw.to_owned())),
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

/// A 2026-07-28 request with its `_meta` read and checked: by [`decode_modern_request`] in
/// one pass, or by the endpoint's careful path with [`parse_modern_meta`].
#[derive(Debug)]
pub struct ModernRequest<'a> {
    /// Its id.
    pub id: RequestId,
    /// The method, as sent.
    pub method: &'a str,
    /// The params (`params.meta` is `None` when [`decode_modern_request`] read `_meta`'s
    /// fields in the same pass).
    pub params: Params<'a>,
    /// `_meta`, read and checked.
    pub meta: ModernMeta<'a>,
}

/// Reads a well-formed 2026-07-28 request in one pass over its bytes: the JSON-RPC envelope,
/// `params` and the `_meta` fields together, without cutting out and re-reading each level.
///
/// `None` for anything else, including every malformed request: the caller then decodes it
/// the careful way ([`decode`](super::jsonrpc::decode), [`Params::parse`],
/// [`parse_modern_meta`]), which names what is wrong. Whatever this accepts, that path
/// accepts too, with the same result; the tests hold the two to that.
pub fn decode_modern_request(message: &Bytes) -> Option<ModernRequest<'_>> {
    let mut params = Params::<'_, ModernMetaFields<'_>>::default();
    let (id, method) = read_request(message, &mut Required(&mut params))?;
    let (meta, params) = params.take_meta();
    // `_meta`'s fields were cut out in the same pass; they are checked as the careful path
    // checks them (an error there is left to it, to be reported in its order).
    let meta = check_modern_meta(meta?.0, RawMeta::of_message(message.clone())).ok()?;
    Some(ModernRequest {
        id,
        method,
        params,
        meta,
    })
}

/// Reads a well-formed request in one pass over its bytes, the JSON-RPC envelope and
/// `params`'s members together (`_meta` kept raw): what the careful path
/// ([`decode`](super::jsonrpc::decode), then [`Params::parse`]) reads in two, cutting
/// `params` out and reading it again.
///
/// `None` for anything else (notifications, responses, every malformed message): the caller
/// then decodes it the careful way, which names what is wrong. Whatever this accepts, that
/// path accepts too, with the same result; the tests hold the two to that.
pub fn decode_request(message: &[u8]) -> Option<(RequestId, &str, Params<'_>)> {
    let mut params = Params::default();
    let (id, method) = read_request(message, &mut Optional(&mut params))?;
    Some((id, method, params))
}

/// `_meta` of a 2026-07-28 request read in the same pass as the rest: its fields, and
/// `clientInfo` checked.
type ModernMetaFields<'a> = ObjectOnly<MetaFields<'a, InfoChecked>>;

/// Reads a JSON-RPC request (an object with `jsonrpc: "2.0"`, `id`, `method`, no `result` or
/// `error`) from `message`, its `params` written into `params` where they stay.
///
/// Not serde's derived reader: that builds each level's value and moves it out through every
/// layer of the deserializer (six copies of a 430-byte request); this one writes each member
/// once. It follows the derived reader's rules (a member twice is an error, unknown members
/// are skipped, `null` reads as absent) and accepts a little less (a member name with an
/// escape, or a request written as an array), which the careful path then reads.
#[inline(always)] // into each reader: `params` stays where its caller put it
fn read_request<'a, S: ParamsSlot<'a>>(
    message: &'a [u8],
    params: &mut S,
) -> Option<(RequestId, &'a str)> {
    // One UTF-8 check of the whole body instead of one per borrowed string.
    let text = std::str::from_utf8(message).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let envelope = de.deserialize_map(Envelope { params }).ok()?;
    de.end().ok()?;
    envelope
}

/// How `params` is read: [`Required`] (2026-07-28: an object, `_meta` in it) or [`Optional`]
/// (absent or `null` reads as no params).
trait ParamsSlot<'a> {
    /// Reads the member's value into its place.
    fn read<D: Deserializer<'a>>(&mut self, d: D) -> Result<(), D::Error>;
    /// Whether a request without `params` is one.
    const OPTIONAL: bool;
}

/// `params` must be an object.
struct Required<'p, 'a, M>(&'p mut Params<'a, M>);

/// `params` may be absent or `null`.
struct Optional<'p, 'a>(&'p mut Params<'a>);

impl<'a, M: Deserialize<'a>> ParamsSlot<'a> for Required<'_, 'a, M> {
    fn read<D: Deserializer<'a>>(&mut self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(ParamsInPlace(self.0))
    }
    const OPTIONAL: bool = false;
}

impl<'a> ParamsSlot<'a> for Optional<'_, 'a> {
    fn read<D: Deserializer<'a>>(&mut self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(OptionalParams(self.0))
    }
    const OPTIONAL: bool = true;
}

/// `null`, or an object read in place.
struct OptionalParams<'p, 'a>(&'p mut Params<'a>);

impl<'a> Visitor<'a> for OptionalParams<'_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'a>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(ParamsInPlace(self.0))
    }
}

/// The JSON-RPC envelope's members.
struct Envelope<'s, S> {
    params: &'s mut S,
}

impl<'a, S: ParamsSlot<'a>> Visitor<'a> for Envelope<'_, S> {
    /// `None`: a JSON-RPC message, but not a request of this kind.
    type Value = Option<(RequestId, &'a str)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'a>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut jsonrpc: Option<&'a str> = None;
        let mut id: Option<RequestId> = None;
        let mut method: Option<&'a str> = None;
        let mut params = false;
        let mut answer = false;
        while let Some(key) = map.next_key::<&'a str>()? {
            match key {
                "jsonrpc" => once(&mut jsonrpc, map.next_value()?, "jsonrpc")?,
                "id" => once(&mut id, map.next_value()?, "id")?,
                "method" => once(&mut method, map.next_value()?, "method")?,
                "params" => {
                    if std::mem::replace(&mut params, true) {
                        return Err(de::Error::duplicate_field("params"));
                    }
                    map.next_value_seed(Seed(&mut *self.params))?;
                }
                // A response's members, present even as `null`: not a request.
                "result" | "error" => {
                    map.next_value::<&'a RawValue>()?;
                    answer = true;
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let (Some(jsonrpc), Some(id), Some(method)) = (jsonrpc, id, method) else {
            return Ok(None);
        };
        if jsonrpc != "2.0" || answer || !(params || S::OPTIONAL) {
            return Ok(None);
        }
        Ok(Some((id, method)))
    }
}

/// Sets `slot` to `value`, unless the member came before (an error, as serde's derived
/// readers make it).
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &'static str) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::duplicate_field(key));
    }
    Ok(())
}

/// `params`'s value read into its slot.
struct Seed<'s, S>(&'s mut S);

impl<'a, S: ParamsSlot<'a>> de::DeserializeSeed<'a> for Seed<'_, S> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<(), D::Error> {
        self.0.read(d)
    }
}

/// `params`'s members, each written into its field.
struct ParamsInPlace<'p, 'a, M>(&'p mut Params<'a, M>);

impl<'a, M: Deserialize<'a>> Visitor<'a> for ParamsInPlace<'_, 'a, M> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'a>>(self, mut map: A) -> Result<(), A::Error> {
        // Every field by name, none left out: a field added to `Params` does not compile here
        // until this reader reads it as the derived one does.
        let Params {
            meta,
            name,
            uri,
            arguments,
            cursor,
            input_responses,
            request_state,
            reference,
            argument,
            context,
            level,
            protocol_version,
            capabilities,
            client_info,
            notifications,
            request_id,
            task_id,
        } = self.0;
        // The members met so far, one bit each: a member twice is an error even when the
        // first was `null` (which reads as absent).
        let mut seen = 0u32;
        while let Some(key) = map.next_key::<&'a str>()? {
            let (bit, member) = match key {
                "_meta" => (0, Member::Meta),
                "name" => (1, Member::Raw(&mut *name)),
                "uri" => (2, Member::Raw(&mut *uri)),
                "arguments" => (3, Member::Raw(&mut *arguments)),
                "cursor" => (4, Member::Raw(&mut *cursor)),
                "inputResponses" => (5, Member::Present(&mut *input_responses)),
                "requestState" => (6, Member::Present(&mut *request_state)),
                "ref" => (7, Member::Raw(&mut *reference)),
                "argument" => (8, Member::Raw(&mut *argument)),
                "context" => (9, Member::Raw(&mut *context)),
                "level" => (10, Member::Raw(&mut *level)),
                "protocolVersion" => (11, Member::Raw(&mut *protocol_version)),
                "capabilities" => (12, Member::Raw(&mut *capabilities)),
                "clientInfo" => (13, Member::Raw(&mut *client_info)),
                "notifications" => (14, Member::Raw(&mut *notifications)),
                "requestId" => (15, Member::Raw(&mut *request_id)),
                "taskId" => (16, Member::Raw(&mut *task_id)),
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                    continue;
                }
            };
            if seen & (1 << bit) != 0 {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            seen |= 1 << bit;
            match member {
                Member::Meta => *meta = map.next_value()?,
                Member::Raw(field) => *field = map.next_value()?,
                Member::Present(field) => *field = Some(map.next_value::<&'a RawValue>()?),
            }
        }
        Ok(())
    }
}

/// Where a member of `params` goes, and how it is read.
enum Member<'f, 'a> {
    /// `_meta`, read as the reader's `M`.
    Meta,
    /// A raw value; `null` reads as absent.
    Raw(&'f mut Option<&'a RawValue>),
    /// A raw value kept even when `null`, to be refused (`inputResponses`, `requestState`;
    /// see the fields).
    Present(&'f mut Option<&'a RawValue>),
}

/// A `T` read only from a JSON object: serde reads a struct from an array too (by position),
/// which the careful path refuses.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Object(PhantomData)).map(ObjectOnly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The careful path: envelope, then `params`, then `_meta`, each cut out and re-read.
    fn careful(body: &[u8]) -> Option<(RequestId, String, String, String)> {
        let Ok(crate::protocol::jsonrpc::Incoming::Request { id, method, params }) =
            crate::protocol::jsonrpc::decode(body)
        else {
            return None;
        };
        let params = Params::parse(params).ok()?;
        let meta = parse_modern_meta(params.meta).ok()?;
        let (_, rest) = params.take_meta();
        Some((
            id,
            method.into_owned(),
            format!("{rest:?}"),
            describe(&meta),
        ))
    }

    fn describe(m: &ModernMeta<'_>) -> String {
        let r = &m.meta;
        format!(
            "{} {:?} {:?} {:?} {:?} {:?}",
            m.protocol_version,
            r.client_capabilities,
            r.client_info.get(),
            r.log_level,
            r.progress_token,
            r.raw.get().map(RawValue::get)
        )
    }

    /// Every body the one-pass reader accepts, the careful path accepts with the same
    /// result; and it accepts the well-formed ones (else it would be no fast path at all).
    #[test]
    fn the_one_pass_reader_agrees_with_the_careful_path() {
        use serde_json::{Value, json};
        let base = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                "io.modelcontextprotocol/logLevel": "info",
                "progressToken": "p1",
                "x.example/other": [1, {"a": null}]
            },
            "name": "add", "arguments": {"a": 1, "b": 2}, "cursor": "c1"
        }});
        let values = [
            Value::Null,
            json!(1),
            json!(1.5),
            json!(-3),
            json!(18446744073709551615u64),
            json!("2026-07-28"),
            json!("2.0"),
            json!("warning"),
            json!("loud"),
            json!(true),
            json!([]),
            json!([1, 2]),
            json!({}),
            json!({"name": "n", "version": "v"}),
            json!({"elicitation": []}),
            json!({"name": 1}),
        ];
        let paths: [&[&str]; 14] = [
            &["jsonrpc"],
            &["id"],
            &["method"],
            &["params"],
            &["result"],
            &["params", "_meta"],
            &["params", "name"],
            &["params", "requestState"],
            &["params", "_meta", "io.modelcontextprotocol/protocolVersion"],
            &[
                "params",
                "_meta",
                "io.modelcontextprotocol/clientCapabilities",
            ],
            &["params", "_meta", "io.modelcontextprotocol/clientInfo"],
            &["params", "_meta", "io.modelcontextprotocol/logLevel"],
            &["params", "_meta", "progressToken"],
            &[
                "params",
                "_meta",
                "io.modelcontextprotocol/clientCapabilities",
                "sampling",
            ],
        ];
        let mut bodies = vec![base.to_string()];
        for path in paths {
            let (last, parents) = path.split_last().unwrap();
            let mut removed = base.clone();
            let mut slot = &mut removed;
            for p in parents {
                slot = &mut slot[*p];
            }
            slot.as_object_mut().unwrap().remove(*last);
            bodies.push(removed.to_string());
            for v in &values {
                let mut changed = base.clone();
                let mut slot = &mut changed;
                for p in path {
                    slot = &mut slot[*p];
                }
                *slot = v.clone();
                bodies.push(changed.to_string());
            }
        }
        // Spellings a `Value` cannot produce: escapes, duplicates, whitespace, trailing bytes.
        let text = base.to_string();
        for (from, to) in [
            ("\"2.0\"", "\"2\\u002e0\""),
            ("\"tools/call\"", "\"tools\\/call\""),
            ("\"2026-07-28\"", "\"2026\\u002d07-28\""),
            ("\"info\"", "\"inf\\u006f\""),
            ("\"name\":\"add\"", "\"name\":\"add\",\"name\":\"add\""),
            ("\"_meta\":", "\"_meta\":{},\"_meta\":"),
            ("\"id\":7", "\"id\" : 7 "),
            ("\"id\":7", "\"id\":7,\"id\":8"),
            ("\"progressToken\":\"p1\"", "\"progressToken\":1e3"),
            // A member twice, the first `null` (which reads as absent): still twice.
            ("\"cursor\":\"c1\"", "\"cursor\":null,\"cursor\":\"c1\""),
            ("\"params\":", "\"params\":null,\"params\":"),
            // A member's name with an escape: the careful path reads it; the one-pass reader
            // leaves it to it.
            ("\"name\":\"add\"", "\"na\\u006de\":\"add\""),
        ] {
            assert!(text.contains(from), "{from}");
            bodies.push(text.replacen(from, to, 1));
        }
        bodies.push(format!("{text} "));
        bodies.push(format!("{text}x"));
        bodies.push(format!(" \n{text}"));
        let mut fast = 0;
        for body in &bodies {
            let bytes = Bytes::from(body.clone());
            let slow = careful(body.as_bytes());
            if let Some(req) = decode_modern_request(&bytes) {
                fast += 1;
                let (_, rest) = req.params.take_meta();
                let got = (
                    req.id,
                    req.method.to_owned(),
                    format!("{rest:?}"),
                    describe(&req.meta),
                );
                assert_eq!(Some(got), slow, "{body}");
            }
        }
        assert!(decode_modern_request(&Bytes::from(text.clone())).is_some());
        // The reader of any request (`_meta` kept raw), on the same bodies and on what only
        // a handshake session sends: no `params`, a `null` one, notifications, responses.
        for extra in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":null}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","_meta":{"progressToken":3}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        ] {
            bodies.push(extra.to_owned());
        }
        let mut one_pass = 0;
        for body in &bodies {
            let careful = match crate::protocol::jsonrpc::decode(body.as_bytes()) {
                Ok(crate::protocol::jsonrpc::Incoming::Request { id, method, params }) => {
                    Params::parse(params)
                        .ok()
                        .map(|p| (id, method.into_owned(), format!("{p:?}")))
                }
                _ => None,
            };
            if let Some((id, method, params)) = decode_request(body.as_bytes()) {
                one_pass += 1;
                let got = (id, method.to_owned(), format!("{params:?}"));
                assert_eq!(Some(got), careful, "{body}");
            }
        }
        // Every body the careful path reads as a request but the two with escapes in the
        // envelope's strings (borrowed, they cannot be unescaped) and the one with an escape
        // in a member's name; the count pins that down.
        assert_eq!(one_pass, 181, "bodies read in one pass by decode_request");
        assert!(decode_request(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_some());
        // The base and the mutations the careful path also accepts (values of fields read
        // later, absent optional ones, escapes in `_meta` strings, whitespace) take the fast
        // path; the count pins that down.
        assert_eq!(fast, 81, "bodies read in one pass");
        let escaped = text.replacen("\"name\":\"add\"", "\"na\\u006de\":\"add\"", 1);
        assert!(careful(escaped.as_bytes()).is_some());
        assert!(decode_modern_request(&Bytes::from(escaped.clone())).is_none());
        assert!(decode_request(escaped.as_bytes()).is_none());
    }

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
        assert_eq!(m.meta.client_info.get().unwrap().name, "c");
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

    /// The check of `clientInfo` accepts exactly what `Implementation` reads, and the
    /// `Implementation` built later is the one read directly.
    #[test]
    fn client_info_checks_as_implementation_reads() {
        let infos = [
            r#"{"name":"c","version":"1"}"#,
            r#"{"name":"c\u0041","version":"1","title":"T\n"}"#,
            r#"{"name":"c","version":"1","title":null,"description":"d","websiteUrl":"https://x.example"}"#,
            r#"{"name":"c","version":"1","icons":[{"src":"https://x.example/i.png","sizes":["48x48"]}]}"#,
            r#"{"name":"c","version":"1","icons":[{"sizes":["48x48"]}]}"#,
            r#"{"name":"c","version":"1","icons":{}}"#,
            r#"{"name":"c","version":"1","website_url":5,"other":[1]}"#,
            r#"{"name":"c","version":"1","websiteUrl":5}"#,
            r#"{"name":"c","version":"1","title":7}"#,
            r#"{"name":"c","version":"1","name":"d"}"#,
            r#"{"name":"c"}"#,
            r#"{"version":"1"}"#,
            r#"{"name":1,"version":"1"}"#,
            r#"{"name":"c","version":null}"#,
            r#"{}"#,
        ];
        for info in infos {
            let direct = serde_json::from_str::<Implementation>(info).ok();
            let r = raw(&format!(
                r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{info}}}"#
            ));
            match parse_modern_meta(Some(&r)) {
                Ok(m) => assert_eq!(m.meta.client_info.get(), direct.as_ref(), "{info}"),
                Err(e) => {
                    assert!(direct.is_none(), "{info}: {e}");
                    assert_eq!(e.code, -32602);
                }
            }
            // The same through the one-pass reader, whose check keeps a view of the body.
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{}}}}}"#,
                r.get()
            );
            let bytes = Bytes::from(body);
            let fast = decode_modern_request(&bytes);
            assert_eq!(fast.is_some(), direct.is_some(), "{info}");
            if let Some(req) = fast {
                assert_eq!(req.meta.meta.client_info.get(), direct.as_ref(), "{info}");
            }
        }
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
                .get()
                .is_none()
        );
    }
}
