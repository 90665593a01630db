//! What can go wrong when talking to a server.

use crate::protocol::jsonrpc::RpcError;
use crate::protocol::types::CallToolResult;

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL cannot be used (not `http://` or `https://`, or malformed).
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server could not be reached, or the connection broke.
    #[error("network error talking to {url}: {message}")]
    Network {
        /// The server URL.
        url: String,
        /// The underlying error.
        message: String,
    },
    /// The server requires authorization (HTTP 401) and the client has no [`Auth`] to get
    /// it: give one to [`ClientBuilder::auth`](super::ClientBuilder::auth).
    ///
    /// [`Auth`]: super::auth::Auth
    #[error("the server requires authorization (HTTP {status}{}); give the client credentials with ClientBuilder::auth", challenge.as_deref().map(|c| format!(", WWW-Authenticate: {c}")).unwrap_or_default())]
    Unauthorized {
        /// The HTTP status.
        status: u16,
        /// The `WWW-Authenticate` header, if any (challenges carry no secrets).
        challenge: Option<String>,
    },
    /// Authorization failed: discovery, registration, the user step or the token endpoint.
    #[error("authorization failed: {0}")]
    Auth(#[from] super::auth::OAuthError),
    /// The server answered with an HTTP status that carries no JSON-RPC answer.
    #[error("HTTP {status} from the server{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the server answered {method} with an error: {error}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error.
        error: Box<RpcError>,
        /// The HTTP status it came with (200 on stdio).
        status: u16,
    },
    /// A tool ran and failed (`isError: true`).
    #[error("tool {name} failed: {}", tool_error_text(result))]
    Tool {
        /// The tool's name.
        name: String,
        /// The failed result, as sent.
        result: Box<CallToolResult>,
    },
    /// The server's answer breaks the protocol (unparseable, wrong shape, unknown `resultType`).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// No revision both sides speak.
    #[error("no common protocol revision: {0}")]
    UnsupportedVersion(String),
    /// A header value cannot be sent (a control byte, or non-ASCII where Base64 is not allowed).
    #[error("refusing to send the {name} header: {reason}")]
    InvalidHeader {
        /// The header.
        name: String,
        /// Why.
        reason: String,
    },
    /// The server asked for something the client has no handler for.
    #[error("the server asked for {method}, but no handler for it is registered")]
    MissingHandler {
        /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
        method: String,
    },
    /// A registered handler failed.
    #[error("the {method} handler failed: {error}")]
    Handler {
        /// The method it served.
        method: String,
        /// Its error.
        error: Box<RpcError>,
    },
    /// The server kept asking for input (more rounds than allowed).
    #[error(
        "{method} still needs input after {rounds} rounds, the client's limit; raise it with ClientBuilder::max_rounds"
    )]
    TooManyRounds {
        /// The request's method.
        method: String,
        /// How many rounds were made.
        rounds: usize,
    },
    /// A message from the server is larger than the client reads: an HTTP response body or a
    /// stdio line, or the pages of one `list_*` call together.
    #[error(
        "{what} is larger than {limit} bytes, the client's limit; raise it with ClientBuilder::max_body_bytes"
    )]
    BodyTooLarge {
        /// What was too large: the response body (from a URL), a line from the server's
        /// stdout, or a list (`tools/list (its pages together)`).
        what: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An event of the server's event stream is larger than the client reads.
    #[error(
        "an event of the server's event stream is larger than {limit} bytes, the client's limit; raise it with ClientBuilder::max_event_bytes"
    )]
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A `list_*` call met more pages than it follows.
    #[error(
        "{method} has more than {limit} pages, the client's limit; raise it with ClientBuilder::max_pages"
    )]
    TooManyPages {
        /// The list method.
        method: String,
        /// The limit.
        limit: usize,
    },
    /// An `input_required` result asks more questions at once than the client answers.
    #[error(
        "the server answered {method} with {count} input requests at once; the client answers at most {limit}; raise the limit with ClientBuilder::max_server_requests"
    )]
    TooManyInputRequests {
        /// The request's method.
        method: String,
        /// How many input requests the result carried.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A dropped event stream could not be reopened: as many reopenings in a row failed (no
    /// stream, or one that ended at once without a message) as the client allows.
    #[error(
        "the server's event stream dropped and {attempts} attempts in a row to reopen it failed; giving up (the limit is ClientBuilder::max_reconnects)"
    )]
    StreamLost {
        /// The failed reopenings.
        attempts: usize,
    },
    /// A notification stream was closed because its consumer fell behind by more
    /// notifications than it holds.
    #[error(
        "the notification stream was closed: its consumer fell {limit} notifications behind; read faster, or raise the limit with ClientBuilder::notification_buffer"
    )]
    Lagged {
        /// The limit, in notifications.
        limit: usize,
    },
    /// A method the negotiated revision does not have.
    #[error("{method} does not exist in revision {revision}")]
    NotInRevision {
        /// The method.
        method: String,
        /// The negotiated revision.
        revision: String,
    },
    /// The task a tool call became was cancelled before it ended.
    #[error("the task {task_id} was cancelled")]
    TaskCancelled {
        /// The task's id.
        task_id: String,
    },
    /// No answer in time.
    #[error("{method} timed out after {millis} ms")]
    Timeout {
        /// The request's method.
        method: String,
        /// The limit.
        millis: u128,
    },
    /// The connection (the child process, or the client) is closed.
    #[error("the connection is closed")]
    Closed,
    /// The server process could not be started.
    #[error("could not start the server process: {0}")]
    Spawn(#[source] std::io::Error),
    /// Reading or writing the server process's pipes failed.
    #[error("I/O error on the server's stdio: {0}")]
    Io(#[source] std::io::Error),
    /// A skill file did not match the entry the client holds (the skills extension): its
    /// size, its digest or its frontmatter differ, the entry lists no such file, or the entry
    /// itself breaks the extension's rules. Its content must not be used; refresh the entry
    /// with `skills/get` ([`Client::get_skill`](super::Client::get_skill)).
    #[error("skill verification failed for {uri}: {reason}")]
    SkillVerification {
        /// The file (or the skill's `SKILL.md`).
        uri: String,
        /// What did not match.
        reason: String,
    },
    /// A result did not have the expected type.
    #[error("could not decode the result of {method}: {error}")]
    Decode {
        /// The request's method.
        method: String,
        /// The decoding error.
        #[source]
        error: serde_json::Error,
    },
}

fn tool_error_text(result: &CallToolResult) -> String {
    let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
    if text.is_empty() {
        "(no text)".to_owned()
    } else {
        text.join(" ")
    }
}

impl ClientError {
    /// The JSON-RPC error, when the server answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            ClientError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }
}
