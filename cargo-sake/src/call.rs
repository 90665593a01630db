//! `cargo sake call <tool> [json]` and `cargo sake list`: a client for the terminal and for
//! scripts, on sake's own client. The server is the one `cargo sake dev` serves for this crate
//! (its kept port), or `--url`, or a program started over stdio (`--stdio`). The result goes to
//! stdout as JSON (or its text, `--text`); progress and the server's log messages go to stderr;
//! an elicitation is answered at the terminal, a prompt per field of its form. The exit status
//! is 1 when the tool's result is an error, 2 when the call fails (as every other command).

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;

use sake::client::{Client, ClientBuilder};
use sake::{ElicitRequest, ElicitResult, Revision};
use serde_json::{Map, Value, json};

use crate::project::{self, TargetArgs};
use crate::state::ServerState;
use crate::{Error, style};

/// Which server to talk to.
#[derive(Debug, clap::Args)]
pub(crate) struct Connect {
    /// The server's Streamable HTTP endpoint (default: where `cargo sake dev` serves this
    /// crate: its kept port, else 3000).
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    url: Option<String>,
    /// A server to start and talk to over stdio: its command line, split at spaces (no shell
    /// quoting).
    #[arg(long, value_name = "COMMAND")]
    stdio: Option<String>,
    /// The revision to speak (default: the newest the server serves).
    #[arg(long, value_name = "REVISION")]
    revision: Option<String>,
    #[command(flatten)]
    target: TargetArgs,
}

/// `cargo sake call`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The tool's name.
    tool: String,
    /// Its arguments: a JSON object (default `{}`); `-` reads it from stdin.
    arguments: Option<String>,
    /// Print the result's text content instead of the result as JSON.
    #[arg(long)]
    text: bool,
    #[command(flatten)]
    connect: Connect,
}

/// What `cargo sake list` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum What {
    All,
    Tools,
    Prompts,
    Resources,
    Templates,
}

/// `cargo sake list`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// What to list.
    #[arg(value_enum, default_value = "all")]
    what: What,
    /// One line per item (its name and description) instead of JSON.
    #[arg(long)]
    text: bool,
    #[command(flatten)]
    connect: Connect,
}

pub(crate) async fn call(args: CallArgs) -> Result<ExitCode, Error> {
    let arguments = arguments(args.arguments.as_deref())?;
    let client = connect(&args.connect, true).await?;
    // Progress and log messages on stderr while the call runs, each before the result (they
    // reach the stream before the answer does: the notifications are read first).
    let mut notes = client.notifications();
    let print = |n: sake::client::Notification| {
        if let Some(line) = note(&n.method, &n.params) {
            eprintln!("{line}");
        }
    };
    let result = {
        let call = client.call_tool(&args.tool, Value::Object(arguments));
        tokio::pin!(call);
        loop {
            tokio::select! {
                biased;
                Some(n) = notes.recv() => print(n),
                result = &mut call => break result,
            }
        }
    };
    while let Ok(Some(n)) = tokio::time::timeout(std::time::Duration::ZERO, notes.recv()).await {
        print(n);
    }
    drop(notes);
    client.close().await;
    let result =
        result.map_err(|e| Error::Wire(format!("calling the tool `{}`: {e}", args.tool)))?;
    if args.text {
        let text: Vec<String> = result
            .content
            .iter()
            .map(|c| match c.as_text() {
                Some(t) => t.to_owned(),
                None => serde_json::to_string(c).unwrap_or_default(),
            })
            .collect();
        println!("{}", text.join("\n"));
    } else {
        // Through a `Value`: the structured content is printed as the rest is.
        let value = serde_json::to_value(&result).unwrap_or_default();
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    }
    Ok(if result.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) async fn list(args: ListArgs) -> Result<ExitCode, Error> {
    let client = connect(&args.connect, false).await?;
    let caps = client.server_capabilities();
    let wire = |e: sake::client::ClientError| Error::Wire(e.to_string());
    let wants = |w: What| args.what == What::All || args.what == w;
    let mut doc = Map::new();
    let mut lines = Vec::new();
    let mut line = |kind: &str, name: &str, description: Option<&str>| {
        let description = description.unwrap_or_default();
        let first = description.lines().next().unwrap_or_default();
        lines.push(format!("{kind} {name}  {first}").trim_end().to_owned());
    };
    if wants(What::Tools) && caps.tools.is_some() {
        let tools = client.list_tools().await.map_err(wire)?;
        for t in &tools {
            line("tool", &t.name, t.description.as_deref());
        }
        doc.insert("tools".into(), json!(tools));
    }
    if wants(What::Prompts) && caps.prompts.is_some() {
        let prompts = client.list_prompts().await.map_err(wire)?;
        for p in &prompts {
            line("prompt", &p.name, p.description.as_deref());
        }
        doc.insert("prompts".into(), json!(prompts));
    }
    if wants(What::Resources) && caps.resources.is_some() {
        let resources = client.list_resources().await.map_err(wire)?;
        for r in &resources {
            line("resource", &r.uri, r.description.as_deref());
        }
        doc.insert("resources".into(), json!(resources));
    }
    if wants(What::Templates) && caps.resources.is_some() {
        let templates = client.list_resource_templates().await.map_err(wire)?;
        for t in &templates {
            line("template", &t.uri_template, t.description.as_deref());
        }
        doc.insert("resourceTemplates".into(), json!(templates));
    }
    client.close().await;
    if args.text {
        for l in lines {
            println!("{l}");
        }
    } else {
        let out = match args.what {
            What::All => Value::Object(doc),
            _ => doc.into_iter().next().map_or(json!([]), |(_, v)| v),
        };
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}

/// The tool's arguments: a JSON object, from the command line or stdin (`-`).
fn arguments(raw: Option<&str>) -> Result<Map<String, Value>, Error> {
    let text = match raw {
        None => return Ok(Map::new()),
        Some("-") => std::io::read_to_string(std::io::stdin())
            .map_err(|e| Error::Other(format!("cannot read the arguments from stdin: {e}")))?,
        Some(text) => text.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::Other(
            "the arguments must be a JSON object, e.g. '{\"name\": \"Ada\"}'".into(),
        )),
        Err(e) => Err(Error::Other(format!(
            "the arguments are not JSON ({e}): write them as a JSON object, e.g. '{{\"name\": \"Ada\"}}'"
        ))),
    }
}

/// A line for stderr about a notification: progress and log messages; nothing for the rest.
fn note(method: &str, params: &Value) -> Option<String> {
    match method {
        "notifications/progress" => {
            let number = |v: &Value| match v.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
                Some(f) => format!("{f}"),
                None => "?".into(),
            };
            let mut line = format!("progress {}", number(&params["progress"]));
            if !params["total"].is_null() {
                line.push_str(&format!("/{}", number(&params["total"])));
            }
            if let Some(m) = params["message"].as_str() {
                line.push_str(&format!(": {m}"));
            }
            Some(line)
        }
        "notifications/message" => {
            let level = params["level"].as_str().unwrap_or("info");
            let data = match &params["data"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(match params["logger"].as_str() {
                Some(logger) => format!("log {level} ({logger}): {data}"),
                None => format!("log {level}: {data}"),
            })
        }
        _ => None,
    }
}

/// A client of the chosen server; `call`: it asks for progress and answers elicitation at the
/// terminal.
async fn connect(args: &Connect, call: bool) -> Result<Client, Error> {
    let mut builder = ClientBuilder::new().info("cargo-sake", env!("CARGO_PKG_VERSION"));
    if let Some(r) = &args.revision {
        let revision = Revision::parse(r).ok_or_else(|| {
            let known: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
            Error::Other(format!(
                "--revision {r:?}: sake speaks {}",
                known.join(", ")
            ))
        })?;
        builder = builder.revision(revision);
    }
    if call {
        builder = builder
            .progress(true)
            .tasks(true)
            .on_elicitation(|request| async move {
                Ok(tokio::task::spawn_blocking(move || ask(&request))
                    .await
                    .unwrap_or_else(|_| ElicitResult::cancel()))
            });
    }
    for (name, value) in crate::target::parse_headers(&args.target.headers)? {
        builder = builder.header(name, value);
    }
    if let Some(line) = &args.stdio {
        let mut words = line.split_ascii_whitespace();
        let program = words
            .next()
            .ok_or_else(|| Error::Other("--stdio: give the server's command line".into()))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(words).env("SAKE_QUIET", "1");
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "warn");
        }
        return builder
            .spawn(cmd)
            .await
            .map_err(|e| Error::Wire(format!("cannot talk to `{line}` over stdio: {e}")));
    }
    let url = match &args.url {
        Some(url) => url.clone(),
        None => {
            let project = project::load(&args.target).await?;
            let port = ServerState::new(project.state_dir())?
                .port()
                .unwrap_or(crate::target::DEFAULT_PORT);
            format!("http://127.0.0.1:{port}{}", args.target.mcp_path)
        }
    };
    builder.connect(&url).await.map_err(|e| {
        let hint = if args.url.is_none() {
            " (is `cargo sake dev` running? or give --url or --stdio)"
        } else {
            ""
        };
        Error::Wire(format!("cannot connect to {url}: {e}{hint}"))
    })
}

/// Asks the person at the terminal: the message, then a prompt per field of the form (stdin,
/// line by line). End of input declines.
fn ask(request: &ElicitRequest) -> ElicitResult {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "{} {}",
        style::bold("the server asks:"),
        request.message
    );
    if let Some(url) = &request.url {
        let _ = writeln!(err, "  open {url}");
    }
    let schema = request.requested_schema.clone().unwrap_or(Value::Null);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let mut content = Map::new();
    for (name, field) in properties {
        let needed = required.contains(&name.as_str());
        loop {
            let _ = write!(err, "  {}", prompt(name, field, needed));
            let _ = err.flush();
            let mut line = String::new();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = writeln!(err, "\n  (end of input: declined)");
                    return ElicitResult::decline();
                }
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() && !needed {
                break;
            }
            match value_of(line, field) {
                Ok(v) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Err(why) => {
                    let _ = writeln!(err, "  {why}");
                }
            }
        }
    }
    ElicitResult::accept(content)
}

/// The prompt for a field: its title or name, its description, its type or choices, and
/// whether it may stay empty.
fn prompt(name: &str, field: &Value, needed: bool) -> String {
    let title = field["title"].as_str().unwrap_or(name);
    let mut hint = match field["enum"].as_array() {
        Some(choices) => choices
            .iter()
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join("|"),
        None => field["type"].as_str().unwrap_or("string").to_owned(),
    };
    if !needed {
        hint.push_str(", optional");
    }
    match field["description"].as_str() {
        Some(d) => format!("{title} ({hint}) — {d}: "),
        None => format!("{title} ({hint}): "),
    }
}

/// A typed answer from what was typed, per the field's schema.
fn value_of(line: &str, field: &Value) -> Result<Value, String> {
    if let Some(choices) = field["enum"].as_array() {
        return choices
            .iter()
            .find(|c| c.as_str() == Some(line))
            .cloned()
            .ok_or_else(|| "pick one of the choices".to_owned());
    }
    match field["type"].as_str() {
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer yes or no".into()),
        },
        Some("integer") => line
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please".into()),
        Some("number") => line
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "a number, please".into()),
        _ => Ok(Value::String(line.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_and_log_lines() {
        assert_eq!(
            note(
                "notifications/progress",
                &json!({"progressToken": 1, "progress": 2, "total": 4})
            ),
            Some("progress 2/4".into())
        );
        assert_eq!(
            note(
                "notifications/progress",
                &json!({"progressToken": 1, "progress": 0.5, "message": "half"})
            ),
            Some("progress 0.5: half".into())
        );
        assert_eq!(
            note(
                "notifications/message",
                &json!({"level": "info", "data": "sleeping 40 ms"})
            ),
            Some("log info: sleeping 40 ms".into())
        );
        assert_eq!(note("notifications/tools/list_changed", &json!({})), None);
    }

    #[test]
    fn answers_are_typed_by_the_form() {
        assert_eq!(value_of("3", &json!({"type": "integer"})), Ok(json!(3)));
        assert_eq!(
            value_of("x", &json!({"type": "integer"})),
            Err("a whole number, please".into())
        );
        assert_eq!(
            value_of("yes", &json!({"type": "boolean"})),
            Ok(json!(true))
        );
        assert_eq!(
            value_of("b", &json!({"type": "string", "enum": ["a", "b"]})),
            Ok(json!("b"))
        );
        assert_eq!(
            value_of("Ada", &json!({"type": "string"})),
            Ok(json!("Ada"))
        );
        assert_eq!(
            prompt(
                "name",
                &json!({"type": "string", "description": "Your name."}),
                true
            ),
            "name (string) — Your name.: "
        );
    }

    #[test]
    fn arguments_are_a_json_object() {
        assert_eq!(arguments(None).unwrap(), Map::new());
        assert_eq!(
            arguments(Some(r#"{"a": 1}"#)).unwrap(),
            json!({"a": 1}).as_object().cloned().unwrap()
        );
        assert_eq!(
            arguments(Some("[1]")).unwrap_err().to_string(),
            "the arguments must be a JSON object, e.g. '{\"name\": \"Ada\"}'"
        );
    }
}
