//! What the authorization pieces (feature `auth`) and the client (feature `client`) share:
//! one HTTP(S) client on rustls ([`fetch`]) and the well-known URLs of OAuth metadata
//! ([`well_known`]).

pub(crate) mod fetch;
pub(crate) mod well_known;
