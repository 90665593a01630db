//! `cargo sake card`: the server card (as the running server serves it at
//! `<endpoint>/server-card`) and the MCP registry's `server.json` (as the server makes it,
//! `Service::registry_server_json`, written where `SAKE_WRITE_SERVER_JSON` says), from one
//! `Server::listing`.

use std::process::ExitCode;

use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::project::{self, TargetArgs};
use crate::state::ServerState;
use crate::target::{look, parse_headers};
use crate::{Error, style};

/// `cargo sake card`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: TargetArgs,
    /// Print only the server card.
    #[arg(long, conflicts_with = "server_json")]
    server_card: bool,
    /// Print only the registry's server.json (`cargo sake card --server-json > server.json`).
    #[arg(long)]
    server_json: bool,
}

/// The most a server card may weigh.
const MAX_CARD: usize = 1 << 20;

/// `GET <url>`: `Ok(None)` on 404.
async fn get(url: &str, headers: &[(HeaderName, HeaderValue)]) -> Result<Option<Value>, Error> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut request = hyper::Request::get(url);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Empty::new())
        .map_err(|e| Error::Other(format!("GET {url}: {e}")))?;
    let response =
        tokio::time::timeout(std::time::Duration::from_secs(30), client.request(request))
            .await
            .map_err(|_| Error::Wire(format!("GET {url}: no answer within 30 s")))?
            .map_err(|e| Error::Wire(format!("GET {url}: {e}")))?;
    let status = response.status();
    if status == hyper::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let body = http_body_util::Limited::new(response.into_body(), MAX_CARD)
        .collect()
        .await
        .map_err(|e| Error::Wire(format!("GET {url}: {e}")))?
        .to_bytes();
    if !status.is_success() {
        return Err(Error::Wire(format!(
            "GET {url}: {status}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| Error::Wire(format!("GET {url}: not JSON: {e}")))
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, Error> {
    let headers = parse_headers(&args.target.headers)?;
    let project = project::load(&args.target).await?;
    let state = ServerState::new(project.state_dir())?;
    let file = state.scratch("server.json");
    let _ = std::fs::remove_file(&file);
    let card_path = format!("{}/server-card", args.target.mcp_path.trim_end_matches('/'));
    let card = look(&project, &args.target, Some(file.clone()), async |url| {
        let base = url.strip_suffix(&args.target.mcp_path).unwrap_or(url);
        get(&format!("{base}{card_path}"), &headers).await
    })
    .await?;
    let written = std::fs::read_to_string(&file);
    let _ = std::fs::remove_file(&file);
    let server_json = match written {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Null) => None,
            Ok(doc) => Some(doc),
            Err(e) => {
                return Err(Error::Wire(format!(
                    "the server wrote a server.json that is not JSON: {e}"
                )));
            }
        },
        Err(_) => {
            eprintln!(
                "{} the server wrote no server.json: it is built with a sake older than this `cargo sake`",
                style::warning("warning:")
            );
            None
        }
    };
    if card.is_none() && server_json.is_none() {
        return Err(Error::Other(format!(
            "{} has no listing: no server card at {card_path}. Give the server one with `Server::listing(Listing::new(\"io.github.<you>\")…)` and a `Server::description` (see sake's docs/clients.md, \"Server cards\")",
            project.describe()
        )));
    }
    let doc = if args.server_card {
        card.ok_or_else(|| Error::Other("the server serves no server card".into()))?
    } else if args.server_json {
        server_json.ok_or_else(|| Error::Other("the server made no server.json".into()))?
    } else {
        json!({ "serverCard": card, "serverJson": server_json })
    };
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}
