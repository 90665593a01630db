//! `Server::proxy` composed (docs/composition.md, "Remote servers: namespaces, transforms,
//! search"): an upstream's resources, templates, views and skills served under the prefix as a
//! mounted module's, translated both ways (reads, subscriptions, results); its tools reshaped by
//! transforms and a filter; the layers seeing a remote call's arguments as a local one's; and
//! a remote name that collides with the program's own. The upstream is a sake server of this
//! binary's definitions, over HTTP; the gateway is checked on both eras.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sake::TextResourceContents;
use sake::client::{Client, Subscription};
use sake::compose::{Module, ToolFilter, ToolTransform, Upstream};
use sake::middleware::{Allow, Audit, AuditRecord, AuditSink, Kind, McpResponse, from_fn};
use sake::prelude::*;
use sake::testing::TestClient;
use serde_json::{Value, json};

mod gateway;
use gateway::{empty, named_gateway, serve};

/// The two eras every behaviour is checked on.
const REVISIONS: [Revision; 2] = [Revision::V2026_07_28, Revision::V2025_11_25];

/// Adds two numbers.
#[tool(annotations(read_only))]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Forecasts the weather of a city.
#[tool(annotations(read_only))]
fn forecast(city: String, unit: String, days: u32) -> String {
    format!("{days} days of {city} in {unit}")
}

/// Forgets everything.
#[tool(annotations(destructive))]
fn wipe() -> String {
    "wiped".into()
}

/// Signs in.
#[tool]
fn login(user: String, #[arg(sensitive)] password: String) -> String {
    format!("{user} signed in ({} characters)", password.len())
}

/// Links to the manual, and embeds it.
#[tool]
fn manual() -> CallToolResult {
    CallToolResult::success(vec![
        Content::resource_link("docs://readme", "readme"),
        Content::resource(ResourceContents::Text(TextResourceContents::new(
            "docs://readme",
            "Read me.",
        ))),
    ])
}

/// Tells the subscribers that the manual changed.
#[tool]
fn touch(ctx: Context) -> String {
    if let Some(n) = ctx.notifier() {
        n.notify_resource_updated("docs://readme");
    }
    "touched".into()
}

/// Greets someone.
#[prompt]
fn welcome(name: String) -> String {
    format!("Welcome, {name}.")
}

/// Quotes the manual.
#[prompt]
fn cite() -> PromptMessage {
    PromptMessage::user(Content::resource(ResourceContents::Text(
        TextResourceContents::new("docs://readme", "Read me."),
    )))
}

/// The manual.
#[resource(uri = "docs://readme", mime_type = "text/plain")]
fn readme() -> String {
    "Read me.".into()
}

/// A city's weather now.
#[resource(uri = "weather://{city}/now", mime_type = "text/plain")]
fn now(city: String) -> String {
    format!("Sunny in {city}")
}

/// A chart.
#[view(uri = "ui://chart", name = "chart", html = chart_html)]
#[derive(Debug)]
pub struct Chart;

async fn chart_html() -> Result<String, std::fmt::Error> {
    Ok("<!DOCTYPE html><p>chart</p>".into())
}

/// Plots a chart.
#[tool(ui = Chart)]
fn plot() -> String {
    "plotted".into()
}

sake::skills!("../../tests/skills");

/// The upstream: this binary's definitions, served over HTTP.
async fn upstream() -> String {
    serve(Server::from_registry()).await
}

/// A client of the upstream itself, in process: what the gateway's clients are compared with.
fn direct(rev: Revision, apps: bool) -> TestClient {
    let client = TestClient::new(Server::from_registry().quiet(true))
        .unwrap()
        .revision(rev);
    if apps {
        client.capabilities(sake::apps::client_capabilities())
    } else {
        client
    }
}

fn client_of(service: &Service, rev: Revision, apps: bool) -> TestClient {
    let client = TestClient::for_service(service).revision(rev);
    if apps {
        client.capabilities(sake::apps::client_capabilities())
    } else {
        client
    }
}

/// `list[key]`, each item's `field` under the prefix `up` (`f`: how).
fn prefixed(list: &Value, key: &str, field: &str, f: fn(&str) -> String) -> Value {
    let mut items = list[key].clone();
    for item in items.as_array_mut().unwrap() {
        let v = item[field].as_str().unwrap();
        item[field] = json!(f(v));
    }
    items
}

fn up_uri(uri: &str) -> String {
    let (scheme, rest) = uri.split_once("://").unwrap();
    format!("{scheme}://up/{rest}")
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    let mut names: Vec<String> = list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[field].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn remote_resources_templates_and_views_are_served_under_the_prefix() {
    let up = upstream().await;
    let gateway = empty().proxy("up", Upstream::url(&up)).build().unwrap();
    for rev in REVISIONS {
        for apps in [true, false] {
            let what = format!("{rev}, apps {apps}");
            let client = client_of(&gateway, rev, apps);
            let direct = direct(rev, apps);
            // The lists: the upstream's, every URI under the prefix (a view only for a client
            // that renders views, as the upstream lists it).
            let listed = client.request("resources/list", json!({})).await.unwrap();
            let own = direct.request("resources/list", json!({})).await.unwrap();
            assert_eq!(
                listed["resources"],
                prefixed(&own, "resources", "uri", up_uri),
                "{what}"
            );
            let listed = client
                .request("resources/templates/list", json!({}))
                .await
                .unwrap();
            let own = direct
                .request("resources/templates/list", json!({}))
                .await
                .unwrap();
            assert_eq!(
                listed["resourceTemplates"],
                prefixed(&own, "resourceTemplates", "uriTemplate", up_uri),
                "{what}"
            );
            // Tools under the prefix; a tool's view too, for a client that renders views.
            let tools = client.list_tools().await.unwrap();
            let plot = tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "up_plot")
                .unwrap();
            let expected_meta = if apps {
                json!({"ui": {"resourceUri": "ui://up/chart", "visibility": ["model", "app"]}, "ui/resourceUri": "ui://up/chart"})
            } else {
                Value::Null
            };
            assert_eq!(plot["_meta"], expected_meta, "{what}");
        }
        let client = client_of(&gateway, rev, true);
        // Reads: the upstream is asked for its own URI, the client sees the prefixed one.
        let read = client.read_resource("docs://up/readme").await.unwrap();
        assert_eq!(
            read["contents"],
            json!([{"uri": "docs://up/readme", "mimeType": "text/plain", "text": "Read me."}]),
            "{rev}"
        );
        let read = client.read_resource("weather://up/Oslo/now").await.unwrap();
        assert_eq!(
            read["contents"],
            json!([{"uri": "weather://up/Oslo/now", "mimeType": "text/plain", "text": "Sunny in Oslo"}]),
            "{rev}"
        );
        let read = client.read_resource("ui://up/chart").await.unwrap();
        assert_eq!(read["contents"][0]["uri"], json!("ui://up/chart"), "{rev}");
        assert_eq!(
            read["contents"][0]["text"],
            json!("<!DOCTYPE html><p>chart</p>"),
            "{rev}"
        );
        // A tool's links and embedded resources name the prefixed URIs.
        let linked = client.call_tool("up_manual", json!({})).await.unwrap();
        assert_eq!(
            linked["content"],
            json!([
                {"type": "resource_link", "uri": "docs://up/readme", "name": "readme"},
                {"type": "resource", "resource": {"uri": "docs://up/readme", "text": "Read me."}},
            ]),
            "{rev}"
        );
        let cited = client.get_prompt("up_cite", json!({})).await.unwrap();
        assert_eq!(
            cited["messages"],
            json!([{"role": "user", "content": {"type": "resource", "resource": {"uri": "docs://up/readme", "text": "Read me."}}}]),
            "{rev}"
        );
        // The upstream's own URIs are not this server's.
        let e = client.read_resource("docs://readme").await.unwrap_err();
        let own = direct(rev, true)
            .read_resource("docs://nowhere")
            .await
            .unwrap_err();
        assert_eq!(e.code, own.code, "{rev}");
        assert_eq!(e.message, "Resource not found: docs://readme", "{rev}");
    }
}

#[tokio::test]
async fn remote_skills_are_served_under_the_prefix() {
    let up = upstream().await;
    let gateway = empty().proxy("up", Upstream::url(&up)).build().unwrap();
    let client = client_of(&gateway, Revision::V2026_07_28, false);
    let direct = direct(Revision::V2026_07_28, false);
    let listed = client.request("skills/list", json!({})).await.unwrap();
    let own = direct.request("skills/list", json!({})).await.unwrap();
    let mut expected = own["skills"].clone();
    for skill in expected.as_array_mut().unwrap() {
        skill["uri"] = json!(up_uri(skill["uri"].as_str().unwrap()));
        if let Some(files) = skill["resources"].as_array_mut() {
            for f in files {
                f["uri"] = json!(up_uri(f["uri"].as_str().unwrap()));
            }
        }
    }
    assert_eq!(listed["skills"], expected);
    // Two upstreams' skills, each under its prefix, in one list.
    let two = empty()
        .proxy("up", Upstream::url(&up))
        .proxy("other", Upstream::url(&up))
        .build()
        .unwrap();
    let merged = client_of(&two, Revision::V2026_07_28, false)
        .request("skills/list", json!({}))
        .await
        .unwrap();
    let mut both = expected.as_array().unwrap().clone();
    both.extend(expected.as_array().unwrap().iter().map(|s| {
        let text = s.to_string().replace("skill://up/", "skill://other/");
        serde_json::from_str::<Value>(&text).unwrap()
    }));
    assert_eq!(merged["skills"], Value::Array(both));
    let read = client
        .read_resource("skill://up/solo/SKILL.md")
        .await
        .unwrap();
    let own = direct.read_resource("skill://solo/SKILL.md").await.unwrap();
    assert_eq!(
        read["contents"][0]["uri"],
        json!("skill://up/solo/SKILL.md")
    );
    assert_eq!(read["contents"][0]["text"], own["contents"][0]["text"]);
}

/// A client follows a prefixed URI: the gateway follows the upstream's own, and relays its
/// updates under the prefixed one (both eras of client).
#[tokio::test]
async fn updates_of_a_remote_resource_reach_its_subscribers_under_the_prefix() {
    let up = upstream().await;
    let gw = serve(empty().proxy("up", Upstream::url(&up))).await;
    for rev in REVISIONS {
        let client = Client::builder().revision(rev).connect(&gw).await.unwrap();
        let mut updates = client
            .subscribe(Subscription::everything(["docs://up/readme"]))
            .await
            .unwrap();
        // The gateway follows the resource upstream as the subscription arrives: touch it
        // until an update comes through.
        let mut got = None;
        for _ in 0..40 {
            client.call_tool("up_touch", json!({})).await.unwrap();
            if let Ok(Some(n)) =
                tokio::time::timeout(Duration::from_millis(250), updates.recv()).await
                && n.method == "notifications/resources/updated"
            {
                got = n.uri().map(str::to_owned);
                break;
            }
        }
        assert_eq!(got.as_deref(), Some("docs://up/readme"), "{rev}");
    }
}

/// The upstream, with its notifier: what it tells its listening streams, and how many listen
/// (`Notifier::listeners`): the gateway's watch of its lists, and one stream per resource it
/// follows for its clients.
async fn observed_upstream() -> (String, Notifier) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = Server::from_registry().quiet(true).build().unwrap();
    let notifier = service.notifier();
    tokio::spawn(service.serve(listener, std::future::pending()));
    (format!("http://{addr}/mcp"), notifier)
}

/// Waits (five seconds at most) until `want` streams listen to the upstream.
async fn upstream_listeners(up: &Notifier, want: usize, why: &str) {
    for _ in 0..100 {
        if up.listeners() == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(up.listeners(), want, "{why}");
}

/// Whether an update of the upstream's readme reaches `updates` as the gateway's
/// `docs://up/readme` (told again until it does, two seconds at most).
async fn readme_updated(up: &Notifier, updates: &mut sake::client::Notifications) -> bool {
    for _ in 0..8 {
        up.notify_resource_updated("docs://readme");
        if let Ok(Some(n)) = tokio::time::timeout(Duration::from_millis(250), updates.recv()).await
            && n.method == "notifications/resources/updated"
        {
            return n.uri() == Some("docs://up/readme");
        }
    }
    false
}

/// The gateway follows a remote resource upstream while it has subscribers, on both eras:
/// until the last one goes (a 2025-11-25 session unsubscribes, a 2026-07-28 listen stream
/// ends), seen from the upstream's side; a new subscription follows it again and gets its
/// updates; of two subscribers, the first one's going leaves it followed for the second.
#[tokio::test]
async fn a_remote_resource_is_followed_upstream_while_it_has_subscribers() {
    for rev in REVISIONS {
        let (up_url, up) = observed_upstream().await;
        let gw = serve(empty().proxy("up", Upstream::url(&up_url))).await;
        let first = Client::builder().revision(rev).connect(&gw).await.unwrap();
        let second = Client::builder().revision(rev).connect(&gw).await.unwrap();
        let readme = || Subscription {
            resource_subscriptions: vec!["docs://up/readme".into()],
            ..Subscription::default()
        };
        let _ = first.list_resources().await.unwrap();
        // The gateway's watch of the upstream's lists.
        upstream_listeners(&up, 1, "connected").await;
        let mut updates = first.subscribe(readme()).await.unwrap();
        upstream_listeners(&up, 2, "followed").await;
        assert!(readme_updated(&up, &mut updates).await, "{rev}");
        drop(updates);
        upstream_listeners(&up, 1, "released with its subscriber").await;
        // Followed again for a new subscription.
        let mut updates = first.subscribe(readme()).await.unwrap();
        upstream_listeners(&up, 2, "followed again").await;
        assert!(readme_updated(&up, &mut updates).await, "{rev}");
        // Two subscribers, one follow upstream.
        let mut theirs = second.subscribe(readme()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(up.listeners(), 2, "{rev}: one follow for two subscribers");
        drop(updates);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(up.listeners(), 2, "{rev}: kept for the second subscriber");
        assert!(readme_updated(&up, &mut theirs).await, "{rev}");
        drop(theirs);
        upstream_listeners(&up, 1, "released with the second subscriber").await;
    }
}

/// A 2025-11-25 session's subscriptions end with it: deleted (HTTP DELETE) or expired, the
/// gateway no longer follows their resources upstream.
#[tokio::test]
async fn a_sessions_end_or_expiry_ends_what_it_followed_upstream() {
    let rev = Revision::V2025_11_25;
    let (up_url, up) = observed_upstream().await;
    let gw = serve(
        empty()
            .proxy("up", Upstream::url(&up_url))
            .session_lifetime(Duration::from_secs(2)),
    )
    .await;
    let readme = Subscription {
        resource_subscriptions: vec!["docs://up/readme".into()],
        ..Subscription::default()
    };
    // Deleted: its subscription goes with it (not unsubscribed: its stream is kept open).
    let client = Client::builder().revision(rev).connect(&gw).await.unwrap();
    let mut updates = client.subscribe(readme.clone()).await.unwrap();
    upstream_listeners(&up, 2, "followed").await;
    assert!(readme_updated(&up, &mut updates).await);
    client.close().await;
    upstream_listeners(&up, 1, "released with the deleted session").await;
    // Expired: nothing is asked of the gateway, its subscription goes at the expiry.
    let client = Client::builder().revision(rev).connect(&gw).await.unwrap();
    let _updates = client.subscribe(readme.clone()).await.unwrap();
    upstream_listeners(&up, 2, "followed").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    upstream_listeners(&up, 1, "released with the expired session").await;
    // A new session follows it again, and hears its updates.
    let client = Client::builder().revision(rev).connect(&gw).await.unwrap();
    let mut updates = client.subscribe(readme).await.unwrap();
    upstream_listeners(&up, 2, "followed again").await;
    assert!(readme_updated(&up, &mut updates).await);
    drop(updates);
}

/// One caller past its share of the upstream's follows (128) cannot keep another caller's
/// resource from being followed: the other still gets its updates, on both eras.
#[tokio::test]
async fn a_caller_past_its_share_leaves_the_others_followed() {
    for rev in REVISIONS {
        let (up_url, up) = observed_upstream().await;
        let gw = named_gateway("up", Upstream::url(&up_url)).await;
        let user = |name: &'static str| {
            Client::builder().revision(rev).header(
                axum::http::HeaderName::from_static("x-user"),
                axum::http::HeaderValue::from_static(name),
            )
        };
        let greedy = user("greedy").connect(&gw).await.unwrap();
        let other = user("other").connect(&gw).await.unwrap();
        let cities = Subscription {
            resource_subscriptions: (0..129).map(|i| format!("weather://up/c{i}/now")).collect(),
            ..Subscription::default()
        };
        let greedy_updates = greedy.subscribe(cities).await.unwrap();
        // The gateway's watch of the upstream's lists, and the greedy caller's share.
        upstream_listeners(&up, 1 + 128, "the greedy caller's share").await;
        let mut updates = other
            .subscribe(Subscription {
                resource_subscriptions: vec!["docs://up/readme".into()],
                ..Subscription::default()
            })
            .await
            .unwrap();
        upstream_listeners(&up, 1 + 128 + 1, "the other caller's resource").await;
        assert!(readme_updated(&up, &mut updates).await, "{rev}");
        drop(greedy_updates);
        upstream_listeners(&up, 2, "the greedy caller's released").await;
        assert!(readme_updated(&up, &mut updates).await, "{rev}");
    }
}

#[tokio::test]
async fn an_upstreams_tools_are_renamed_hidden_fixed_defaulted_and_filtered() {
    let up = upstream().await;
    let gateway = empty()
        .proxy(
            "up",
            Upstream::url(&up)
                .transform(
                    "forecast",
                    ToolTransform::new()
                        .rename("weather")
                        .describe("The weather of a city.")
                        .fix("unit", "celsius")
                        .default("days", 3),
                )
                .transform("wipe", ToolTransform::new().hide())
                // The upstream lists no such tool: logged when the list is fetched.
                .transform("nothing", ToolTransform::new().describe("Nothing."))
                .filter(ToolFilter::new(|t| t.name != "touch")),
        )
        .build()
        .unwrap();
    for rev in REVISIONS {
        let client = client_of(&gateway, rev, false);
        let own = direct(rev, false).list_tools().await.unwrap();
        let tools = client.list_tools().await.unwrap();
        assert_eq!(
            names(&tools, "tools", "name"),
            ["up_add", "up_login", "up_manual", "up_plot", "up_weather"],
            "{rev}"
        );
        // The renamed tool's listing: the upstream's, re-described, its fixed argument gone,
        // its defaulted one optional with its default.
        let mut expected = own["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "forecast")
            .unwrap()
            .clone();
        expected["name"] = json!("up_weather");
        expected["description"] = json!("The weather of a city.");
        let schema = &mut expected["inputSchema"];
        schema["properties"].as_object_mut().unwrap().remove("unit");
        schema["properties"]["days"]["default"] = json!(3);
        schema["required"] = json!(["city"]);
        let weather = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "up_weather")
            .unwrap();
        assert_eq!(weather, &expected, "{rev}");
        // Fixed and default arguments are put in before the call is forwarded; a fixed one
        // replaces what the client sent.
        let out = client
            .call_tool("up_weather", json!({"city": "Oslo"}))
            .await
            .unwrap();
        assert_eq!(
            out["content"],
            json!([{"type": "text", "text": "3 days of Oslo in celsius"}]),
            "{rev}"
        );
        let out = client
            .call_tool(
                "up_weather",
                json!({"city": "Oslo", "unit": "kelvin", "days": 5}),
            )
            .await
            .unwrap();
        assert_eq!(
            out["content"],
            json!([{"type": "text", "text": "5 days of Oslo in celsius"}]),
            "{rev}"
        );
        // The old name of a renamed tool, a hidden tool, a tool the filter leaves out: not
        // served.
        for name in ["up_forecast", "up_wipe", "up_touch"] {
            let e = client.call_tool(name, json!({})).await.unwrap_err();
            assert_eq!(e.code, -32602, "{rev} {name}");
            assert_eq!(e.message, format!("Unknown tool: {name}"), "{rev} {name}");
            assert_eq!(e.data, Some(json!({"name": name})), "{rev} {name}");
        }
    }
}

/// Collects the audit records.
#[derive(Clone, Default)]
struct Records(Arc<Mutex<Vec<AuditRecord>>>);

impl AuditSink for Records {
    fn record(&self, record: &AuditRecord) {
        self.0.lock().unwrap().push(record.clone());
    }
}

impl Records {
    /// The recorded tool calls' names and arguments, and forgets every record.
    fn take(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .into_iter()
            .filter(|r| r.method == "tools/call")
            .map(|r| (r.name, r.arguments))
            .collect()
    }
}

/// A rule on a call's arguments and the audit trail treat a remote call as a local one: the
/// gateway serves this binary's `add` and `login` itself and the upstream's as `up_add` and
/// `up_login`.
#[tokio::test]
async fn the_layers_see_a_remote_calls_arguments_as_a_local_ones() {
    let up = upstream().await;
    let records = Records::default();
    let gateway = Server::from_registry()
        .quiet(true)
        .proxy("up", Upstream::url(&up))
        .layer(
            Audit::new()
                .sink(records.clone())
                .show(["a", "b", "user", "password"]),
        )
        .layer(Allow::new(|_, req| {
            req.arguments::<Value>()
                .ok()
                .flatten()
                .and_then(|a| a.get("a").and_then(Value::as_i64))
                .is_none_or(|a| a < 100)
        }))
        .build()
        .unwrap();
    for rev in REVISIONS {
        let client = client_of(&gateway, rev, false);
        // Before the gateway has the upstream's list, it cannot know which arguments are
        // secrets: none of a remote call's is recorded.
        if rev == REVISIONS[0] {
            let out = client
                .call_tool("up_login", json!({"user": "ada", "password": "pw"}))
                .await
                .unwrap();
            assert_eq!(
                out["content"],
                json!([{"type": "text", "text": "ada signed in (2 characters)"}])
            );
            assert_eq!(records.take(), [("up_login".to_owned(), json!({}))]);
        }
        client.list_tools().await.unwrap();
        for name in ["add", "up_add"] {
            let out = client
                .call_tool(name, json!({"a": 1, "b": 2}))
                .await
                .unwrap();
            assert_eq!(
                out["content"],
                json!([{"type": "text", "text": "3"}]),
                "{rev}"
            );
        }
        let local = client
            .call_tool("add", json!({"a": 100, "b": 2}))
            .await
            .unwrap_err();
        let remote = client
            .call_tool("up_add", json!({"a": 100, "b": 2}))
            .await
            .unwrap_err();
        let refusal = |name: &str| {
            format!("Forbidden: the server's rules do not allow this caller to call tool `{name}`")
        };
        assert_eq!(
            (local.code, local.message),
            (-32000, refusal("add")),
            "{rev}"
        );
        assert_eq!(
            (remote.code, remote.message),
            (-32000, refusal("up_add")),
            "{rev}"
        );
        for name in ["login", "up_login"] {
            client
                .call_tool(name, json!({"user": "ada", "password": "pw"}))
                .await
                .unwrap();
        }
        assert_eq!(
            records.take(),
            [
                ("add".to_owned(), json!({"a": 1, "b": 2})),
                ("up_add".to_owned(), json!({"a": 1, "b": 2})),
                ("add".to_owned(), json!({"a": 100, "b": 2})),
                ("up_add".to_owned(), json!({"a": 100, "b": 2})),
                // `password` is `writeOnly` in both listings: never recorded.
                ("login".to_owned(), json!({"user": "ada"})),
                ("up_login".to_owned(), json!({"user": "ada"})),
            ],
            "{rev}"
        );
    }
}

/// A remote name that the program's own tool also has: the program's is served and listed
/// once (the upstream's is left out, logged: a remote list cannot be checked at start-up);
/// two upstreams under one prefix stop start-up.
#[tokio::test]
async fn a_remote_name_the_program_serves_itself_is_the_programs() {
    let up = upstream().await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    // Records which function each call reached (`McpRequest::function`: a remote one's is
    // its upstream's label).
    let recording = |seen: Arc<Mutex<Vec<String>>>| {
        from_fn(move |req, next| {
            let seen = seen.clone();
            async move {
                if req.kind() == Kind::Tool {
                    seen.lock().unwrap().push(req.function().to_owned());
                }
                let r: McpResponse = next.run(req).await;
                r
            }
        })
    };
    // At the root, beside a transparent upstream: every name collides.
    let root = Server::from_registry()
        .quiet(true)
        .proxy("", Upstream::url(&up))
        .layer(recording(seen.clone()))
        .build()
        .unwrap();
    // Mounted under `up`, beside the upstream under `up`: every name collides again.
    let mounted = Server::from_registry()
        .quiet(true)
        .mount("up", Module::path(module_path!()))
        .proxy("up", Upstream::url(&up))
        .layer(recording(seen.clone()))
        .build()
        .unwrap();
    for rev in REVISIONS {
        let own = direct(rev, false).list_tools().await.unwrap();
        for (service, prefix) in [(&root, ""), (&mounted, "up_")] {
            let client = client_of(service, rev, false);
            let tools = client.list_tools().await.unwrap();
            let expected: Vec<String> = names(&own, "tools", "name")
                .into_iter()
                .map(|n| format!("{prefix}{n}"))
                .collect();
            assert_eq!(names(&tools, "tools", "name"), expected, "{rev} {prefix}");
            let add = format!("{prefix}add");
            let out = client
                .call_tool(&add, json!({"a": 1, "b": 2}))
                .await
                .unwrap();
            assert_eq!(out["content"], json!([{"type": "text", "text": "3"}]));
            // The program's own function ran, not the upstream's (whose label is `upstream`
            // or `up`).
            assert_eq!(
                std::mem::take(&mut *seen.lock().unwrap()),
                std::slice::from_ref(&add),
                "{rev}"
            );
            let prompts = client.request("prompts/list", json!({})).await.unwrap();
            assert_eq!(
                names(&prompts, "prompts", "name"),
                [format!("{prefix}cite"), format!("{prefix}welcome")],
                "{rev}"
            );
            let resources = client.request("resources/list", json!({})).await.unwrap();
            let uris = names(&resources, "resources", "uri");
            let mut unique = uris.clone();
            unique.dedup();
            assert_eq!(uris, unique, "{rev} {prefix}");
        }
    }
    // An upstream without a prefix owns every name but those under another's prefix,
    // whatever the order.
    let both = empty()
        .proxy("", Upstream::url(&up))
        .proxy("up", Upstream::url(&up))
        .layer(recording(seen.clone()))
        .build()
        .unwrap();
    let client = client_of(&both, Revision::V2026_07_28, false);
    let own = direct(Revision::V2026_07_28, false)
        .list_tools()
        .await
        .unwrap();
    let mut expected = names(&own, "tools", "name");
    expected.extend(expected.clone().into_iter().map(|n| format!("up_{n}")));
    expected.sort();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(names(&tools, "tools", "name"), expected);
    for name in ["add", "up_add"] {
        client
            .call_tool(name, json!({"a": 1, "b": 2}))
            .await
            .unwrap();
    }
    assert_eq!(
        std::mem::take(&mut *seen.lock().unwrap()),
        ["upstream", "up"]
    );
    let e = empty()
        .proxy("up", Upstream::url(&up))
        .proxy("up", Upstream::url(&up))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "invalid configuration: Server::proxy: two upstreams are served under the prefix `up` (`upstream`: no prefix); give each its own prefix"
    );
}
