//! Composition in-process (docs/composition.md): modules mounted under a prefix
//! (`Server::mount`), tool transforms, and tool search — on a 2026-07-28 client and on a
//! 2025-11-25 session, with exact payloads and the exact start-up errors.

use sake::Revision;
use sake::compose::{Module, ToolFilter, ToolSearch, ToolTransform};
use sake::prelude::*;
use sake::testing::TestClient;
use serde_json::{Value, json};

/// The two eras every behaviour is checked on.
const REVISIONS: [Revision; 2] = [Revision::V2026_07_28, Revision::V2025_11_25];

/// A module of tools, a prompt, a resource and a template, mounted under `math`.
mod math {
    use sake::prelude::*;

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

    /// Greets someone.
    #[prompt]
    fn greet(
        /// Who.
        name: String,
    ) -> String {
        format!("Hello, {name}!")
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

    /// Below `math`: mounted with it.
    pub mod stats {
        use sake::prelude::*;

        /// The mean of some numbers.
        #[tool]
        fn mean(values: Vec<f64>) -> String {
            let n = values.len().max(1) as f64;
            (values.iter().sum::<f64>() / n).to_string()
        }
    }

    /// A chart: a view, mounted with its tool, which follows it.
    #[view(uri = "ui://chart", name = "chart", html = chart_html)]
    pub struct Chart;

    async fn chart_html() -> Result<String, std::fmt::Error> {
        Ok("<!DOCTYPE html><p>chart</p>".into())
    }

    /// Plots a chart.
    #[tool(ui = Chart)]
    fn plot() -> String {
        "plotted".into()
    }

    // Skills: served under `skill://math/…`.
    sake::skills!("../skills");
}

/// A module with another `add`: mounted under `math` too, the two collide.
mod clash {
    use sake::prelude::*;

    /// Adds, differently.
    #[tool]
    fn add() -> String {
        "clash".into()
    }

    /// Greets too.
    #[prompt]
    fn greet() -> String {
        "Hi".into()
    }
}

/// A module whose tool, mounted under `p`, takes the name of a root tool.
mod under {
    use sake::prelude::*;

    /// Why.
    #[tool]
    fn y() -> String {
        "under".into()
    }
}

/// A module whose tool's name is too long once prefixed.
mod long {
    use sake::prelude::*;

    /// Long.
    #[tool]
    fn a_tool_whose_name_is_long_enough_to_pass_the_limit_with_a_prefix() -> String {
        "long".into()
    }
}

/// Pong.
#[tool]
fn ping() -> String {
    "pong".into()
}

/// The root tool `p_y`.
#[tool]
fn p_y() -> String {
    "root".into()
}

fn module(name: &str) -> Module {
    Module::path(format!("{}::{name}", module_path!()))
}

/// The server most tests use: `math` under `math`, `clash` under `other`.
fn server() -> sake::Server {
    sake::Server::from_registry()
        .mount("math", module("math"))
        .mount("other", module("clash"))
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[field].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_mounted_module_is_served_under_its_prefix_and_leaves_the_root() {
    let service = server().build().unwrap();
    for rev in REVISIONS {
        let client = TestClient::for_service(&service).revision(rev);
        let tools = client.list_tools().await.unwrap();
        assert_eq!(
            names(&tools, "tools", "name"),
            [
                "a_tool_whose_name_is_long_enough_to_pass_the_limit_with_a_prefix",
                "math_add",
                "math_forecast",
                "math_mean",
                "math_plot",
                "math_wipe",
                "other_add",
                "p_y",
                "ping",
                "y",
            ],
            "{rev}"
        );
        let add = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "math_add")
            .unwrap();
        assert_eq!(
            add,
            &json!({
                "name": "math_add",
                "description": "Adds two numbers.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
                "annotations": {"readOnlyHint": true},
            }),
            "{rev}"
        );
        let result = client
            .call_tool("math_add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "5"}]),
            "{rev}"
        );
        assert_eq!(
            client
                .call_tool("math_mean", json!({"values": [1.0, 2.0]}))
                .await
                .unwrap()["content"],
            json!([{"type": "text", "text": "1.5"}])
        );
        assert_eq!(
            client.call_tool("other_add", json!({})).await.unwrap()["content"],
            json!([{"type": "text", "text": "clash"}])
        );
        // The root no longer serves it.
        let err = client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str(), err.data),
            (-32602, "Unknown tool: add", Some(json!({"name": "add"}))),
            "{rev}"
        );

        let prompts = client.request("prompts/list", json!({})).await.unwrap();
        assert_eq!(
            names(&prompts, "prompts", "name"),
            ["math_greet", "other_greet"],
            "{rev}"
        );
        let prompt = client
            .get_prompt("math_greet", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(
            prompt["messages"],
            json!([{"role": "user", "content": {"type": "text", "text": "Hello, Ada!"}}]),
            "{rev}"
        );

        let resources = client.request("resources/list", json!({})).await.unwrap();
        assert_eq!(
            names(&resources, "resources", "uri"),
            [
                "docs://math/readme",
                "skill://math/docs/guide/SKILL.md",
                "skill://math/docs/guide/deep/SKILL.md",
                "skill://math/docs/guide/references/a.md",
                "skill://math/solo/SKILL.md",
                "skill://math/solo/assets/dot.png",
            ],
            "{rev}"
        );
        let templates = client
            .request("resources/templates/list", json!({}))
            .await
            .unwrap();
        assert_eq!(
            names(&templates, "resourceTemplates", "uriTemplate"),
            ["weather://math/{city}/now"],
            "{rev}"
        );
        let read = client.read_resource("docs://math/readme").await.unwrap();
        assert_eq!(
            read["contents"],
            json!([{"uri": "docs://math/readme", "mimeType": "text/plain", "text": "Read me."}]),
            "{rev}"
        );
        // The template matches under its prefix, its variable where it was.
        let read = client
            .read_resource("weather://math/Oslo/now")
            .await
            .unwrap();
        assert_eq!(
            read["contents"],
            json!([{"uri": "weather://math/Oslo/now", "mimeType": "text/plain", "text": "Sunny in Oslo"}]),
            "{rev}"
        );
        let err = client.read_resource("docs://readme").await.unwrap_err();
        assert_eq!(err.data, Some(json!({"uri": "docs://readme"})), "{rev}");
    }
}

#[test]
fn two_definitions_under_one_name_stop_start_up_naming_both() {
    let err = sake::Server::from_registry()
        .mount("math", module("math"))
        .mount("math", module("clash"))
        .build()
        .err()
        .unwrap();
    let file = "tests/tests/compose_mount.rs";
    assert_eq!(
        err.to_string(),
        format!(
            "two tools would be served as `math_add`: `add` at {file}:19 (compose_mount::math), mounted under `math`, and `add` at {file}:92 (compose_mount::clash), mounted under `math`; mount one under another prefix, or rename it (ToolTransform::rename)"
        )
    );
    // A mounted tool and a root one.
    let err = sake::Server::from_registry()
        .mount("math", module("math"))
        .mount("other", module("clash"))
        .mount("p", module("under"))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "two tools would be served as `p_y`: `p_y` at {file}:133 (compose_mount), and `y` at {file}:109 (compose_mount::under), mounted under `p`; mount one under another prefix, or rename it (ToolTransform::rename)"
        )
    );
    assert!(matches!(err, sake::Error::Collision { kind: "tool", .. }));
    // Prompts: `clash`'s tools stay at the root, its prompt meets `math`'s.
    let err = sake::Server::from_registry()
        .mount("math", module("math"))
        .mount("math", module("clash").tools(Vec::<String>::new()))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "two prompts would be served as `math_greet`: `greet` at {file}:37 (compose_mount::math), mounted under `math`, and `greet` at {file}:98 (compose_mount::clash), mounted under `math`; mount one under another prefix, or rename it (#[prompt(name = \"...\")])"
        )
    );
}

#[test]
fn a_name_over_64_characters_stops_start_up() {
    let err = server()
        .mount("prefix", module("long"))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "tool `a_tool_whose_name_is_long_enough_to_pass_the_limit_with_a_prefix` at tests/tests/compose_mount.rs:120 (compose_mount::long): mounted under `prefix` it would be served as `prefix_a_tool_whose_name_is_long_enough_to_pass_the_limit_with_a_prefix`, 71 characters; a tool name has at most 64: mount it under a shorter prefix, or rename it (ToolTransform::rename)"
    );
    let err = server().mount("a.b", module("long")).build().err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid configuration: Server::mount: the prefix \"a.b\" (of Module::path(\"compose_mount::long\")) must be letters, digits, `-` and `_`, at least one"
    );
}

fn transformed() -> sake::Server {
    sake::Server::from_registry()
        .mount(
            "math",
            module("math")
                .transform("add", ToolTransform::new().rename("plus").title("Plus"))
                .transform("wipe", ToolTransform::new().hide())
                .transform(
                    "forecast",
                    ToolTransform::new()
                        .describe("The weather, in Celsius.")
                        .fix("unit", "celsius")
                        .default("days", 3),
                ),
        )
        .mount("other", module("clash"))
}

#[tokio::test]
async fn transforms_rename_hide_fix_and_default() {
    let service = transformed().build().unwrap();
    for rev in REVISIONS {
        let client = TestClient::for_service(&service).revision(rev);
        let tools = client.list_tools().await.unwrap();
        let math: Vec<&Value> = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"].as_str().unwrap().starts_with("math_"))
            .collect();
        assert_eq!(
            math,
            [
                &json!({
                    "name": "math_forecast",
                    "description": "The weather, in Celsius.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string"},
                            "days": {"type": "integer", "minimum": 0, "default": 3},
                        },
                        "required": ["city"],
                    },
                    "annotations": {"readOnlyHint": true},
                }),
                &json!({"name": "math_mean", "description": "The mean of some numbers.", "inputSchema": math[1]["inputSchema"].clone()}),
                &json!({"name": "math_plot", "description": "Plots a chart.", "inputSchema": {"type": "object", "properties": {}}}),
                &json!({
                    "name": "math_plus",
                    "title": "Plus",
                    "description": "Adds two numbers.",
                    "inputSchema": math[3]["inputSchema"].clone(),
                    "annotations": {"readOnlyHint": true},
                }),
            ],
            "{rev}"
        );
        assert_eq!(
            client
                .call_tool("math_plus", json!({"a": 1, "b": 1}))
                .await
                .unwrap()["content"],
            json!([{"type": "text", "text": "2"}])
        );
        // Fixed: injected, whatever the client sends; defaulted: filled when absent.
        for (args, text) in [
            (json!({"city": "Oslo"}), "3 days of Oslo in celsius"),
            (
                json!({"city": "Oslo", "days": 5}),
                "5 days of Oslo in celsius",
            ),
            (
                json!({"city": "Oslo", "unit": "kelvin"}),
                "3 days of Oslo in celsius",
            ),
        ] {
            let result = client.call_tool("math_forecast", args).await.unwrap();
            assert_eq!(
                result["content"],
                json!([{"type": "text", "text": text}]),
                "{rev}"
            );
        }
        for hidden in ["math_wipe", "math_add", "wipe"] {
            let err = client.call_tool(hidden, json!({})).await.unwrap_err();
            assert_eq!(
                (err.code, err.message, err.data),
                (
                    -32602,
                    format!("Unknown tool: {hidden}"),
                    Some(json!({"name": hidden}))
                ),
                "{rev}"
            );
        }
    }
}

#[tokio::test]
async fn a_filter_keeps_only_the_tools_it_accepts() {
    let service = sake::Server::from_registry()
        .mount("math", module("math").filter(ToolFilter::read_only()))
        .mount("other", module("clash"))
        .build()
        .unwrap();
    let tools = TestClient::for_service(&service)
        .list_tools()
        .await
        .unwrap();
    let math: Vec<String> = names(&tools, "tools", "name")
        .into_iter()
        .filter(|n| n.starts_with("math_"))
        .collect();
    assert_eq!(math, ["math_add", "math_forecast"]);
}

#[test]
fn a_transform_of_what_does_not_exist_stops_start_up() {
    let err = sake::Server::from_registry()
        .mount(
            "math",
            module("math").transform("nope", ToolTransform::new().hide()),
        )
        .mount("other", module("clash"))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "invalid configuration: Server::mount(\"math\", Module::path(\"compose_mount::math\")) names the tool `nope`, which the module does not define (its tools are add, forecast, mean, plot, wipe)"
    );
    let err = sake::Server::from_registry()
        .mount(
            "math",
            module("math").transform("add", ToolTransform::new().fix("c", 1)),
        )
        .mount("other", module("clash"))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "tool `add` at tests/tests/compose_mount.rs:19 (compose_mount::math): its ToolTransform fixes the argument `c`, which it does not take (its arguments are a, b)"
    );
}

#[tokio::test]
async fn tool_search_lists_the_search_tool_and_the_pinned_ones() {
    let service = server()
        .tool_search(ToolSearch::new().pin(["ping"]).max_results(2))
        .build()
        .unwrap();
    for rev in REVISIONS {
        let client = TestClient::for_service(&service).revision(rev);
        let tools = client.list_tools().await.unwrap();
        assert_eq!(
            names(&tools, "tools", "name"),
            ["ping", "search_tools"],
            "{rev}"
        );
        let result = client
            .call_tool("search_tools", json!({"query": "weather of a city"}))
            .await
            .unwrap();
        let expected = json!({"tools": [{
            "name": "math_forecast",
            "description": "Forecasts the weather of a city.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string"},
                    "days": {"type": "integer", "minimum": 0},
                },
                "required": ["city", "unit", "days"],
            },
            "annotations": {"readOnlyHint": true},
        }]});
        assert_eq!(result["structuredContent"], expected, "{rev}");
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": expected.to_string()}]),
            "{rev}"
        );
        // What it found is callable by name, listed or not.
        let called = client
            .call_tool(
                "math_forecast",
                json!({"city": "Oslo", "unit": "K", "days": 1}),
            )
            .await
            .unwrap();
        assert_eq!(
            called["content"],
            json!([{"type": "text", "text": "1 days of Oslo in K"}])
        );
        // Bounded: two of the three `add`-ish matches by default, one when asked.
        let result = client
            .call_tool("search_tools", json!({"query": "add"}))
            .await
            .unwrap();
        assert_eq!(
            names(&result["structuredContent"], "tools", "name"),
            ["math_add", "other_add"]
        );
        let result = client
            .call_tool("search_tools", json!({"query": "add", "limit": 1}))
            .await
            .unwrap();
        assert_eq!(
            names(&result["structuredContent"], "tools", "name"),
            ["math_add"]
        );
        let result = client
            .call_tool("search_tools", json!({"query": "the , of"}))
            .await
            .unwrap();
        assert_eq!(
            (&result["content"], &result["isError"]),
            (
                &json!([{"type": "text", "text": "The query has no words to search for: give a word of a tool's name, title or description"}]),
                &json!(true)
            )
        );
    }
}

#[test]
fn a_pin_of_no_tool_stops_start_up() {
    let err = server()
        .tool_search(ToolSearch::new().pin(["nope"]))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "invalid configuration: ToolSearch::pin names `nope`, which is not served (tools: a_tool_whose_name_is_long_enough_to_pass_the_limit_with_a_prefix, math_add, math_forecast, math_mean, math_plot, math_wipe, other_add, p_y, ping, y)"
    );
}

#[tokio::test]
async fn a_view_moves_with_its_module_and_its_tools_follow_it() {
    let service = server().build().unwrap();
    for rev in REVISIONS {
        let client = TestClient::for_service(&service)
            .revision(rev)
            .capabilities(sake::apps::client_capabilities());
        let tools = client.list_tools().await.unwrap();
        let plot = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "math_plot")
            .unwrap();
        assert_eq!(
            plot["_meta"],
            json!({"ui": {"resourceUri": "ui://math/chart", "visibility": ["model", "app"]}, "ui/resourceUri": "ui://math/chart"}),
            "{rev}"
        );
        let resources = client.request("resources/list", json!({})).await.unwrap();
        assert_eq!(
            names(&resources, "resources", "uri"),
            [
                "docs://math/readme",
                "ui://math/chart",
                "skill://math/docs/guide/SKILL.md",
                "skill://math/docs/guide/deep/SKILL.md",
                "skill://math/docs/guide/references/a.md",
                "skill://math/solo/SKILL.md",
                "skill://math/solo/assets/dot.png",
            ],
            "{rev}"
        );
        let read = client.read_resource("ui://math/chart").await.unwrap();
        assert_eq!(
            read["contents"][0]["text"],
            json!("<!DOCTYPE html><p>chart</p>"),
            "{rev}"
        );
        assert_eq!(
            read["contents"][0]["uri"],
            json!("ui://math/chart"),
            "{rev}"
        );
    }
}

#[tokio::test]
async fn the_longest_path_wins_and_unselected_tools_stay_at_the_root() {
    let service = sake::Server::from_registry()
        .mount("math", module("math").tools(["add"]))
        .mount("stats", module("math::stats"))
        .mount("other", module("clash"))
        .build()
        .unwrap();
    let client = TestClient::for_service(&service)
        .revision(Revision::V2025_11_25)
        .capabilities(sake::apps::client_capabilities());
    let tools = client.list_tools().await.unwrap();
    assert_eq!(
        names(&tools, "tools", "name"),
        [
            "a_tool_whose_name_is_long_enough_to_pass_the_limit_with_a_prefix",
            "forecast",
            "math_add",
            "other_add",
            "p_y",
            "ping",
            "plot",
            "stats_mean",
            "wipe",
            "y",
        ]
    );
    // `plot` stayed at the root; its view moved with the module, and the link follows it.
    let plot = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "plot")
        .unwrap();
    assert_eq!(plot["_meta"]["ui"]["resourceUri"], json!("ui://math/chart"));
    assert_eq!(
        client
            .call_tool("stats_mean", json!({"values": [2.0]}))
            .await
            .unwrap()["content"],
        json!([{"type": "text", "text": "2"}])
    );
    assert_eq!(
        client.call_tool("wipe", json!({})).await.unwrap()["content"],
        json!([{"type": "text", "text": "wiped"}])
    );
}

#[tokio::test]
async fn skills_move_with_their_module() {
    let service = server().build().unwrap();
    let modern = TestClient::for_service(&service);
    let skills = modern.request("skills/list", json!({})).await.unwrap();
    assert_eq!(
        names(&skills, "skills", "uri"),
        [
            "skill://math/docs/guide/SKILL.md",
            "skill://math/docs/guide/deep/SKILL.md",
            "skill://math/solo/SKILL.md"
        ]
    );
    for rev in REVISIONS {
        let client = TestClient::for_service(&service).revision(rev);
        let read = client
            .read_resource("skill://math/docs/guide/references/a.md")
            .await
            .unwrap();
        assert_eq!(
            read["contents"][0]["uri"],
            json!("skill://math/docs/guide/references/a.md"),
            "{rev}"
        );
        let err = client
            .read_resource("skill://docs/guide/references/a.md")
            .await
            .unwrap_err();
        assert_eq!(
            err.data,
            Some(json!({"uri": "skill://docs/guide/references/a.md"})),
            "{rev}"
        );
    }
}

#[tokio::test]
async fn the_roots_tools_are_transformed_with_server_transform() {
    let service = server()
        .transform(
            "ping",
            ToolTransform::new().rename("health").describe("Is it up?"),
        )
        .transform("p_y", ToolTransform::new().hide())
        .build()
        .unwrap();
    for rev in REVISIONS {
        let client = TestClient::for_service(&service).revision(rev);
        let tools = client.list_tools().await.unwrap();
        let root: Vec<&Value> = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| !t["name"].as_str().unwrap().contains('_'))
            .collect();
        assert_eq!(
            root,
            [
                &json!({"name": "health", "description": "Is it up?", "inputSchema": {"type": "object", "properties": {}}}),
                &json!({"name": "y", "description": "Why.", "inputSchema": {"type": "object", "properties": {}}}),
            ],
            "{rev}"
        );
        assert_eq!(
            client.call_tool("health", json!({})).await.unwrap()["content"],
            json!([{"type": "text", "text": "pong"}])
        );
        for gone in ["ping", "p_y"] {
            let err = client.call_tool(gone, json!({})).await.unwrap_err();
            assert_eq!(err.message, format!("Unknown tool: {gone}"), "{rev}");
        }
    }
    let err = server()
        .transform("add", ToolTransform::new().hide())
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "invalid configuration: Server::transform names the tool `add`, which is not served at the root (a mounted tool is transformed with Module::transform)"
    );
}

#[test]
fn a_transform_of_a_tool_left_out_of_the_module_stops_start_up() {
    let err = sake::Server::from_registry()
        .mount(
            "math",
            module("math")
                .tools(["add"])
                .transform("wipe", ToolTransform::new().hide()),
        )
        .mount("other", module("clash"))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "invalid configuration: Server::mount(\"math\", Module::path(\"compose_mount::math\")) transforms the tool `wipe`, which its Module::tools leaves out: add it there, or drop the transform"
    );
}
