//! Tool search over a remote server's tools (docs/composition.md, "Remote servers:
//! namespaces, transforms, search"): a gateway in front of an upstream of two hundred tools
//! lists only its search tool and a pinned remote tool; the search finds the upstream's tools
//! (fetched with its list), ranked and bounded, and what it returns is called by name.

use sake::compose::{Module, ToolSearch, Upstream};
use sake::prelude::*;
use sake::testing::TestClient;
use serde_json::{Value, json};

mod gateway;
use gateway::empty;

/// Ten tools in a module named `$m`.
macro_rules! ten_tools {
    ($($m:ident)*) => {$(
        mod $m {
            use sake::prelude::*;

            /// Tells the weather of a city.
            #[tool(annotations(read_only))]
            fn get_weather(city: String) -> String {
                format!("{}: sunny in {city}", module_path!())
            }
            /// Converts an amount between currencies.
            #[tool]
            fn convert_currency(amount: f64, from: String, to: String) -> String {
                format!("{amount} {from} in {to}")
            }
            /// Sends an email message.
            #[tool]
            fn send_email(to: String) -> String { format!("sent to {to}") }
            /// Lists the files of a folder.
            #[tool]
            fn list_files() -> String { "none".into() }
            /// Reads a file's text.
            #[tool]
            fn read_file(path: String) -> String { path }
            /// Books a meeting room.
            #[tool]
            fn book_room() -> String { "booked".into() }
            /// Translates a text into another language.
            #[tool]
            fn translate(text: String) -> String { text }
            /// Looks a word up in the dictionary.
            #[tool]
            fn define_word(word: String) -> String { word }
            /// Rolls a die.
            #[tool]
            fn roll_die() -> String { "4".into() }
            /// Counts the words of a text.
            #[tool]
            fn count_words(text: String) -> String { text.split_whitespace().count().to_string() }
        }
    )*};
}

ten_tools!(
    m00 m01 m02 m03 m04 m05 m06 m07 m08 m09 m10 m11 m12 m13 m14 m15 m16 m17 m18 m19
);

/// The upstream: two hundred tools, each module under its own name, over HTTP.
async fn upstream() -> String {
    let mut server = Server::from_registry().quiet(true);
    for i in 0..20 {
        let name = format!("m{i:02}");
        server = server.mount(
            name.clone(),
            Module::path(format!("{}::{name}", module_path!())),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        server
            .build()
            .unwrap()
            .serve(listener, std::future::pending()),
    );
    format!("http://{addr}/mcp")
}

fn names(result: &Value) -> Vec<&str> {
    result["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_gateway_in_front_of_two_hundred_remote_tools_shows_one_search_tool() {
    let up = upstream().await;
    let gateway = empty()
        .proxy("up", Upstream::url(&up))
        // A remote tool may be pinned: its list is not known at start-up.
        .tool_search(ToolSearch::new().pin(["up_m03_roll_die"]))
        .build()
        .unwrap();
    for rev in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = TestClient::for_service(&gateway).revision(rev);
        let list = client.list_tools().await.unwrap();
        let listed: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(listed, ["search_tools", "up_m03_roll_die"], "{rev}");

        // Twenty remote tools match `weather`: the default ten, by name, as listed upstream
        // under the prefix.
        let found = client
            .call_tool("search_tools", json!({"query": "weather"}))
            .await
            .unwrap();
        let expected: Vec<String> = (0..10).map(|i| format!("up_m{i:02}_get_weather")).collect();
        assert_eq!(names(&found), expected, "{rev}");
        assert_eq!(
            found["structuredContent"]["tools"][3],
            json!({
                "name": "up_m03_get_weather",
                "description": "Tells the weather of a city.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "annotations": {"readOnlyHint": true},
            }),
            "{rev}"
        );
        // A word of the name counts most: the module's name and the tool's.
        let found = client
            .call_tool("search_tools", json!({"query": "m12 currency", "limit": 3}))
            .await
            .unwrap();
        assert_eq!(
            names(&found),
            [
                "up_m12_convert_currency",
                "up_m00_convert_currency",
                "up_m01_convert_currency"
            ],
            "{rev}"
        );
        // At most fifty, whatever the limit asks.
        let found = client
            .call_tool("search_tools", json!({"query": "text", "limit": 100}))
            .await
            .unwrap();
        assert_eq!(names(&found).len(), 50, "{rev}");
        // What a search returns is called by name, through the gateway.
        let called = client
            .call_tool("up_m17_get_weather", json!({"city": "Oslo"}))
            .await
            .unwrap();
        assert_eq!(
            called["content"],
            json!([{"type": "text", "text": "proxy_search::m17: sunny in Oslo"}]),
            "{rev}"
        );
    }
}

#[tokio::test]
async fn a_pin_under_no_remote_prefix_still_stops_start_up() {
    let up = upstream().await;
    let e = empty()
        .proxy("up", Upstream::url(&up))
        .tool_search(ToolSearch::new().pin(["down_m03_roll_die"]))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "invalid configuration: ToolSearch::pin names `down_m03_roll_die`, which is not served (tools: )"
    );
}
