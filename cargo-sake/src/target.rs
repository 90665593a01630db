//! The server a subcommand talks to, shared by `dev`, `schemas` and `card` so that no
//! subcommand imports another: the `--header`s of the command line, and a server built and
//! started for one look.

use std::path::PathBuf;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};

use crate::Error;
use crate::build;
use crate::process::{Server, ServerOptions, free_port};
use crate::project::{Project, TargetArgs};
use crate::state;

/// The port `cargo sake dev` serves on (and `call`/`list` reach) when neither `--port` nor an
/// earlier run says one.
pub(crate) const DEFAULT_PORT: u16 = 3000;

/// `Name: value` headers from the command line.
pub(crate) fn parse_headers(raw: &[String]) -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
    raw.iter()
        .map(|h| {
            let (name, value) = h.split_once(':').ok_or_else(|| {
                Error::Other(format!("--header {h:?}: write it as `Name: value`"))
            })?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| Error::Other(format!("--header {h:?}: not a header name")))?;
            let value = HeaderValue::from_str(value.trim())
                .map_err(|_| Error::Other(format!("--header {h:?}: not a header value")))?;
            Ok((name, value))
        })
        .collect()
}

/// How long a server started for one look may take to listen.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds the crate's server, starts it on a free port (its output kept, shown if it fails),
/// asks it what `then` asks at its URL, and stops it. `server_json`: where it writes its `server.json`.
pub(crate) async fn look<T>(
    project: &Project,
    target: &TargetArgs,
    server_json: Option<PathBuf>,
    then: impl AsyncFnOnce(&str) -> Result<T, Error>,
) -> Result<T, Error> {
    let built = build::build(project, target).await?;
    let key = state::session_key(&project.target_directory)?;
    let port = free_port()?;
    let mut server = Server::start(ServerOptions {
        executable: &built.executable,
        port,
        key: &key,
        args: &target.args,
        previous_lists: None,
        server_json,
        apps: None,
        quiet: true,
    })
    .await?;
    server.ready(READY_TIMEOUT).await?;
    let url = format!("http://127.0.0.1:{port}{}", target.mcp_path);
    let result = then(&url).await;
    server.stop().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_from_the_command_line() {
        let h = parse_headers(&["Authorization: Bearer abc".into()]).unwrap();
        assert_eq!(h[0].0, "authorization");
        assert_eq!(h[0].1, "Bearer abc");
        assert_eq!(
            parse_headers(&["Authorization".into()])
                .unwrap_err()
                .to_string(),
            "--header \"Authorization\": write it as `Name: value`"
        );
    }
}
