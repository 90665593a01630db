//! The MCP headers as HTTP reads them: the names, the Base64 sentinel, and the reading rules
//! (a header that appears twice, or holds anything but visible ASCII, is refused), all in the
//! protocol layer, shared with the client and the front. Public only with the `internals`
//! feature (fuzz targets, benches).

#[allow(unused_imports)]
pub use crate::protocol::headers::{
    METHOD, NAME, PARAM_PREFIX, PROTOCOL_VERSION, SESSION_ID, decode_sentinel, display_name,
    encode_value, name, read, read_as,
};
