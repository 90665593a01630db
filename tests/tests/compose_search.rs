//! Tool search in front of a large catalog (docs/composition.md, "Tool search"): 500 tools —
//! the same ten tools in fifty modules, each mounted under its own name — of which
//! `tools/list` shows only the search tool and a pinned one; searches return bounded, ranked
//! definitions that stay callable by name.

use sake::Revision;
use sake::compose::{Module, ToolSearch};
use sake::testing::TestClient;
use serde_json::{Value, json};

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
    m20 m21 m22 m23 m24 m25 m26 m27 m28 m29 m30 m31 m32 m33 m34 m35 m36 m37 m38 m39
    m40 m41 m42 m43 m44 m45 m46 m47 m48 m49
);

fn server() -> sake::Server {
    let mut server = sake::Server::from_registry();
    for i in 0..50 {
        let name = format!("m{i:02}");
        server = server.mount(
            name.clone(),
            Module::path(format!("{}::{name}", module_path!())),
        );
    }
    server.tool_search(ToolSearch::new().pin(["m00_roll_die"]))
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
async fn five_hundred_tools_behind_one_search_tool() {
    let service = server().build().unwrap();
    for rev in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = TestClient::for_service(&service).revision(rev);
        let list = client.list_tools().await.unwrap();
        let listed: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(listed, ["m00_roll_die", "search_tools"], "{rev}");
        assert_eq!(
            list["tools"][1],
            json!({
                "name": "search_tools",
                "title": "Search tools",
                "description": "Finds this server's tools by words of their names, titles and descriptions, and returns their definitions (name, description, inputSchema, …), best matches first. Call a tool it returns by its name; most tools are not listed, only found here.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Words to look for in the tools' names, titles and descriptions"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to return at most"},
                    },
                    "required": ["query"],
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                    "required": ["tools"],
                },
                "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
            }),
            "{rev}"
        );

        // Fifty tools match `weather`: the default ten, by name.
        let found = client
            .call_tool("search_tools", json!({"query": "weather"}))
            .await
            .unwrap();
        let expected: Vec<String> = (0..10).map(|i| format!("m{i:02}_get_weather")).collect();
        assert_eq!(names(&found), expected, "{rev}");
        assert_eq!(
            found["structuredContent"]["tools"][3],
            json!({
                "name": "m03_get_weather",
                "description": "Tells the weather of a city.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "annotations": {"readOnlyHint": true},
            })
        );
        // A word of the name counts most: the module's name and the tool's.
        let found = client
            .call_tool("search_tools", json!({"query": "m42 currency", "limit": 3}))
            .await
            .unwrap();
        assert_eq!(
            names(&found),
            [
                "m42_convert_currency",
                "m00_convert_currency",
                "m01_convert_currency"
            ],
            "{rev}"
        );
        // At most fifty, whatever the limit asks.
        let found = client
            .call_tool("search_tools", json!({"query": "text", "limit": 50}))
            .await
            .unwrap();
        assert_eq!(names(&found).len(), 50, "{rev}");
        let refused = client
            .call_tool("search_tools", json!({"query": "text", "limit": "all"}))
            .await
            .unwrap();
        assert_eq!(
            (&refused["content"], &refused["isError"]),
            (
                &json!([{"type": "text", "text": "Invalid arguments for tool `search_tools`: `limit`: invalid type: string \"all\", expected usize"}]),
                &json!(true)
            ),
            "{rev}"
        );
        // What a search returns is called by name.
        let called = client
            .call_tool("m42_get_weather", json!({"city": "Oslo"}))
            .await
            .unwrap();
        assert_eq!(
            called["content"],
            json!([{"type": "text", "text": "compose_search::m42: sunny in Oslo"}]),
            "{rev}"
        );
    }
}
