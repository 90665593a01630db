//! `sake-demo`: an MCP server shipped as a binary. It serves MCP on stdin/stdout by default (what
//! desktop clients start), or Streamable HTTP with `--http [ADDR]`. Logs go to stderr.

use std::process::ExitCode;

use sake::card::{Listing, Package, Repository};
use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

/// The default address of `--http`.
const DEFAULT_ADDR: &str = "127.0.0.1:3000";

const USAGE: &str = "\
sake-demo: a demo MCP server built with sake

Usage:
  sake-demo                  serve MCP on stdin/stdout
  sake-demo --http [ADDR]    serve Streamable HTTP at http://ADDR/mcp (default 127.0.0.1:3000)
  sake-demo --server-json    print the MCP registry's server.json (what server.json holds)
  sake-demo --server-card    print the server card (served at /mcp/server-card with --http)
  sake-demo --help           print this help
  sake-demo --version        print the version

Logs go to stderr; set RUST_LOG (e.g. RUST_LOG=debug) for more.";

/// The sum of two numbers.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two numbers.
#[tool(annotations(read_only, idempotent))]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

/// How many words a text has.
#[derive(Serialize, JsonSchema)]
struct WordCount {
    /// Words, separated by whitespace.
    words: usize,
}

/// Counts the words of a text.
#[tool(annotations(read_only, idempotent))]
fn word_count(
    /// The text.
    text: String,
) -> WordCount {
    WordCount {
        words: text.split_whitespace().count(),
    }
}

/// Asks the model to explain a concept simply.
#[prompt]
fn explain(
    /// What to explain.
    topic: String,
) -> String {
    format!("Explain {topic} in three sentences, for someone new to it.")
}

/// What this server is.
#[resource(uri = "demo://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "sake-demo: a demo MCP server built with sake. Tools add and word_count, prompt explain."
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Stdio,
    Http(String),
    Help,
    Version,
    ServerJson,
    ServerCard,
}

/// Reads the arguments after the program name.
fn parse(args: &[String]) -> Result<Command, String> {
    match args {
        [] => Ok(Command::Stdio),
        [flag] if flag == "--help" || flag == "-h" => Ok(Command::Help),
        [flag] if flag == "--version" || flag == "-V" => Ok(Command::Version),
        [flag] if flag == "--http" => Ok(Command::Http(DEFAULT_ADDR.to_owned())),
        [flag] if flag == "--server-json" => Ok(Command::ServerJson),
        [flag] if flag == "--server-card" => Ok(Command::ServerCard),
        [flag, addr] if flag == "--http" && !addr.starts_with('-') => {
            Ok(Command::Http(addr.clone()))
        }
        _ => Err(format!("unexpected arguments: {}", args.join(" "))),
    }
}

/// The server, with how it is listed: the registry's `server.json` and the server card are
/// generated from this (`--server-json`, `--server-card`).
fn server() -> Server {
    Server::from_registry()
        .name("sake-demo")
        .version(env!("CARGO_PKG_VERSION"))
        .title("sake demo")
        .description(
            "A demo MCP server built with sake: add numbers, count words, explain a topic.",
        )
        .website_url("https://github.com/sake-rs/sake/blob/main/docs/clients.md")
        .instructions("Use `add` for sums and `word_count` to count words.")
        .listing(
            Listing::new("io.github.sake-rs")
                .repository(
                    Repository::github("https://github.com/sake-rs/sake")
                        .subfolder("examples/installable"),
                )
                .package(Package::cargo("sake-demo", env!("CARGO_PKG_VERSION"))),
        )
}

/// Prints a document of the listing, as pretty JSON.
fn print_listing(
    doc: fn(&sake::Service) -> Option<serde_json::Value>,
) -> Result<(), Box<dyn std::error::Error>> {
    let service = server().build()?;
    let doc = doc(&service).ok_or("the server has no listing")?;
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// Serves HTTP on `addr` until Ctrl-C; the greeting on stderr says where and how to connect.
async fn serve_http(addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    let service = server().build()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let ctrl_c = async {
        // Without a Ctrl-C handler the server serves until the process is killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    service.serve(listener, ctrl_c).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("sake-demo: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let served = match command {
        Command::Help => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            println!("sake-demo {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::ServerJson => print_listing(sake::Service::registry_server_json),
        Command::ServerCard => print_listing(sake::Service::server_card),
        Command::Stdio => server().serve_stdio().await.map_err(Into::into),
        Command::Http(addr) => serve_http(&addr).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sake-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_command_line() {
        assert_eq!(parse(&args(&[])), Ok(Command::Stdio));
        assert_eq!(
            parse(&args(&["--http"])),
            Ok(Command::Http("127.0.0.1:3000".into()))
        );
        assert_eq!(
            parse(&args(&["--http", "0.0.0.0:8080"])),
            Ok(Command::Http("0.0.0.0:8080".into()))
        );
        assert_eq!(parse(&args(&["--help"])), Ok(Command::Help));
        assert_eq!(parse(&args(&["-V"])), Ok(Command::Version));
        assert_eq!(parse(&args(&["--server-json"])), Ok(Command::ServerJson));
        assert_eq!(parse(&args(&["--server-card"])), Ok(Command::ServerCard));
        assert_eq!(
            parse(&args(&["--port", "1"])),
            Err("unexpected arguments: --port 1".into())
        );
        assert_eq!(
            parse(&args(&["--http", "--help"])),
            Err("unexpected arguments: --http --help".into())
        );
    }

    #[test]
    fn the_tools_stay_functions() {
        assert_eq!(add(2, 3).sum, 5);
        assert_eq!(word_count(" one two\tthree\n".into()).words, 3);
    }
}
