//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640) on the wire: the
//! declaration in `server/discover`, `skills/list`, `skills/get`, `resources/directory/read`,
//! skill files as resources on 2026-07-28 and on a 2025-11-25 session, a skill defined in code
//! and a dynamic one. Exact statuses and whole payloads (digests as `sha256sum` prints them);
//! every reply validated against the revision's schema (`sake_tests::schema`).

use sake::prelude::*;
use sake::skills::{SkillDef, SkillSource};
use sake_tests::rpc::{complete, err, ok};
use sake_tests::{Req, Wire};
use serde_json::{Value, json};

// The fixture: tests/skills (the path is relative to this file) (docs/guide with a nested skill, solo with a binary file).
sake::skills!("../skills");

const SERVER: (&str, &str) = ("skills", "1.0.0");

/// The `SKILL.md` of the skill made in code.
const MADE: &str = "---\nname: made\ndescription: Made in code.\n---\nBody.\n";

/// A dynamic skill: today's report, generated when read.
struct Daily;

impl SkillSource for Daily {
    fn read(&self, path: &str) -> sake::skills::BoxFuture<Result<Option<Vec<u8>>, ResourceError>> {
        let bytes = match path {
            "SKILL.md" => Some(
                b"---\nname: daily\ndescription: Today's report.\n---\nRead data/today.csv.\n"
                    .to_vec(),
            ),
            "data/today.csv" => Some(b"day,orders\nmonday,12\n".to_vec()),
            // A careless source (a directory read by path): what it must never be asked for.
            "secret.txt" => Some(b"not listed".to_vec()),
            p if p.contains("..") || p.starts_with('/') || p.contains('\\') || p.contains('%') => {
                Some(b"root:x:0:0".to_vec())
            }
            _ => None,
        };
        Box::pin(async move { Ok(bytes) })
    }

    fn files(&self) -> sake::skills::BoxFuture<Vec<String>> {
        Box::pin(async { vec!["SKILL.md".to_owned(), "data/today.csv".to_owned()] })
    }
}

fn server() -> Server {
    Server::from_registry()
        .name(SERVER.0)
        .version(SERVER.1)
        .skill(SkillDef::new("made").file("SKILL.md", MADE))
        .skill(SkillDef::dynamic(
            "reports/daily",
            "---\nname: daily\ndescription: Today's report.\n---\n",
            Daily,
        ))
}

fn wire() -> Wire {
    Wire::new(server())
}

fn file(uri: &str, digest: &str, size: u64) -> Value {
    json!({"uri": uri, "digest": format!("sha256:{digest}"), "size": size})
}

fn guide() -> Value {
    json!({
        "uri": "skill://docs/guide/SKILL.md",
        "frontmatter": {"name": "guide", "description": "A guide with a nested skill.",
                        "license": "MIT", "metadata": {"version": "1.0"}},
        "resources": [
            file("skill://docs/guide/SKILL.md", "19f482d413e8b2e7eb68b9367ebb5fcb833db39fe4024969bfd891c34f257caf", 125),
            file("skill://docs/guide/deep/SKILL.md", "dd85e8283340550a519565e0555ee5c28512e78becb6af0a9a3ae3b27fdde97b", 55),
            file("skill://docs/guide/references/a.md", "3a766e384d888713de58319afc21c93cb1d9d9a2484ac880a459f4bb235abc26", 13),
        ],
    })
}

fn deep() -> Value {
    json!({
        "uri": "skill://docs/guide/deep/SKILL.md",
        "frontmatter": {"name": "deep", "description": "Nested in guide."},
        "resources": [file("skill://docs/guide/deep/SKILL.md", "dd85e8283340550a519565e0555ee5c28512e78becb6af0a9a3ae3b27fdde97b", 55)],
    })
}

fn made() -> Value {
    json!({
        "uri": "skill://made/SKILL.md",
        "frontmatter": {"name": "made", "description": "Made in code."},
        "resources": [file("skill://made/SKILL.md", "41be1c881c63e2f55fe515d753517e719896fcd90a7767a4ebb596d8129800d3", 52)],
    })
}

fn daily() -> Value {
    json!({
        "uri": "skill://reports/daily/SKILL.md",
        "frontmatter": {"name": "daily", "description": "Today's report."},
        "resources": "dynamic",
    })
}

fn solo() -> Value {
    json!({
        "uri": "skill://solo/SKILL.md",
        "frontmatter": {"name": "solo", "description": "Top-level, with a picture."},
        "resources": [
            file("skill://solo/SKILL.md", "5067c3c3cedfcb2da7311b8f9cb1c9c18d65edad0ef3107dbaafdf4987522208", 79),
            file("skill://solo/assets/dot.png", "bc09c2590d2502c8ffaf1a3c09aa89df222e03d186a8daa0c7fce6321fb6e928", 70),
        ],
    })
}

/// The 2026-07-28 results of lists and reads carry these hints (the defaults).
fn cached(fields: Value) -> Value {
    let mut r = complete(SERVER, fields);
    r["ttlMs"] = json!(60_000);
    r["cacheScope"] = json!("public");
    r
}

/// Every skill file as `resources/list` shows it (both eras), in URI order.
fn listed_files() -> Value {
    json!([
        {"uri": "skill://docs/guide/SKILL.md", "name": "guide", "description": "A guide with a nested skill.",
         "mimeType": "text/markdown", "size": 125,
         "_meta": {"io.modelcontextprotocol.skills/license": "MIT",
                   "io.modelcontextprotocol.skills/metadata": {"version": "1.0"}}},
        {"uri": "skill://docs/guide/deep/SKILL.md", "name": "deep", "description": "Nested in guide.",
         "mimeType": "text/markdown", "size": 55},
        {"uri": "skill://docs/guide/references/a.md", "name": "a.md", "mimeType": "text/markdown", "size": 13},
        {"uri": "skill://made/SKILL.md", "name": "made", "description": "Made in code.",
         "mimeType": "text/markdown", "size": 52},
        {"uri": "skill://reports/daily/SKILL.md", "name": "daily", "description": "Today's report.",
         "mimeType": "text/markdown"},
        {"uri": "skill://solo/SKILL.md", "name": "solo", "description": "Top-level, with a picture.",
         "mimeType": "text/markdown", "size": 79},
        {"uri": "skill://solo/assets/dot.png", "name": "dot.png", "mimeType": "image/png", "size": 70},
    ])
}

#[tokio::test]
async fn discovery_declares_the_extension_with_directory_read() {
    let w = wire();
    let reply = w.send(Req::modern(1, "server/discover", json!({}))).await;
    let result = &reply.json(200)["result"];
    assert_eq!(
        result["capabilities"],
        json!({"logging": {}, "resources": {"subscribe": true, "listChanged": true},
               "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}})
    );
}

#[tokio::test]
async fn skills_list_is_flat_complete_and_cacheable() {
    let w = wire();
    let reply = w.send(Req::modern(1, "skills/list", json!({}))).await;
    reply.assert_json(
        200,
        ok(
            1,
            cached(json!({"skills": [guide(), deep(), made(), daily(), solo()]})),
        ),
    );
}

#[tokio::test]
async fn skills_list_pages_keep_entries_whole() {
    let w = Wire::new(server().page_size(2));
    let first = w.send(Req::modern(1, "skills/list", json!({}))).await;
    let page = &first.json(200)["result"];
    assert_eq!(page["skills"], json!([guide(), deep()]));
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let second = w
        .send(Req::modern(2, "skills/list", json!({"cursor": cursor})))
        .await;
    let page = &second.json(200)["result"];
    assert_eq!(page["skills"], json!([made(), daily()]));
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let third = w
        .send(Req::modern(3, "skills/list", json!({"cursor": cursor})))
        .await;
    third.assert_json(200, ok(3, cached(json!({"skills": [solo()]}))));
}

#[tokio::test]
async fn skills_get_answers_for_every_skill_and_refuses_the_rest() {
    let w = wire();
    for (i, entry) in [guide(), deep(), made(), daily(), solo()]
        .into_iter()
        .enumerate()
    {
        let uri = entry["uri"].clone();
        let reply = w
            .send(Req::modern(i as i64, "skills/get", json!({"uri": uri})))
            .await;
        reply.assert_json(200, ok(i as i64, cached(json!({"skill": entry}))));
    }
    for uri in [
        "skill://docs/guide",
        "skill://docs/guide/references/a.md",
        "skill://nothing/SKILL.md",
    ] {
        let reply = w
            .send(Req::modern(9, "skills/get", json!({"uri": uri})))
            .await;
        reply.assert_json(
            200,
            err(
                9,
                -32602,
                &format!("No skill is served at {uri}"),
                Some(json!({"uri": uri})),
            ),
        );
    }
    let reply = w.send(Req::modern(10, "skills/get", json!({}))).await;
    reply.assert_json(
        200,
        err(
            10,
            -32602,
            "Invalid params: missing required parameter `uri`",
            None,
        ),
    );
}

#[tokio::test]
async fn directories_list_their_direct_children() {
    let w = wire();
    let read =
        |id: i64, uri: &str| Req::modern(id, "resources/directory/read", json!({"uri": uri}));
    let dir =
        |uri: &str, name: &str| json!({"uri": uri, "name": name, "mimeType": "inode/directory"});
    let files = listed_files();
    // A skill's root: its files and its subdirectories (the nested skill's among them).
    w.send(read(1, "skill://docs/guide")).await.assert_json(
        200,
        ok(
            1,
            complete(
                SERVER,
                json!({"resources": [
                    files[0].clone(),
                    dir("skill://docs/guide/deep", "deep"),
                    dir("skill://docs/guide/references", "references"),
                ]}),
            ),
        ),
    );
    // A prefix above skills, and the first segment (the URI's authority).
    w.send(read(2, "skill://docs")).await.assert_json(
        200,
        ok(
            2,
            complete(
                SERVER,
                json!({"resources": [dir("skill://docs/guide", "guide")]}),
            ),
        ),
    );
    w.send(read(3, "skill://solo/assets")).await.assert_json(
        200,
        ok(
            3,
            complete(SERVER, json!({"resources": [files[6].clone()]})),
        ),
    );
    // A dynamic skill's directories come from its source.
    w.send(read(4, "skill://reports/daily")).await.assert_json(
        200,
        ok(
            4,
            complete(
                SERVER,
                json!({"resources": [
                    {"uri": "skill://reports/daily/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
                    dir("skill://reports/daily/data", "data"),
                ]}),
            ),
        ),
    );
    w.send(read(5, "skill://reports/daily/data")).await.assert_json(
        200,
        ok(
            5,
            complete(
                SERVER,
                json!({"resources": [{"uri": "skill://reports/daily/data/today.csv", "name": "today.csv", "mimeType": "text/csv"}]}),
            ),
        ),
    );
    w.send(read(6, "skill://reports")).await.assert_json(
        200,
        ok(
            6,
            complete(
                SERVER,
                json!({"resources": [dir("skill://reports/daily", "daily")]}),
            ),
        ),
    );
    // A file is not a directory; nor is what the server does not serve.
    for (id, uri, what) in [
        (
            7,
            "skill://docs/guide/SKILL.md",
            "is not a directory resource",
        ),
        (
            8,
            "skill://docs/guide/",
            "is not a directory this server serves",
        ),
        (
            9,
            "skill://elsewhere",
            "is not a directory this server serves",
        ),
        (
            10,
            "skill://reports/daily/nope",
            "is not a directory this server serves",
        ),
    ] {
        w.send(read(id, uri)).await.assert_json(
            200,
            err(
                id,
                -32602,
                &format!("{uri} {what}"),
                Some(json!({"uri": uri})),
            ),
        );
    }
}

#[tokio::test]
async fn directory_pages_follow_the_cursor() {
    let w = Wire::new(server().page_size(2));
    let first = w
        .send(Req::modern(
            1,
            "resources/directory/read",
            json!({"uri": "skill://docs/guide"}),
        ))
        .await;
    let page = &first.json(200)["result"];
    assert_eq!(page["resources"].as_array().unwrap().len(), 2);
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let second = w
        .send(Req::modern(
            2,
            "resources/directory/read",
            json!({"uri": "skill://docs/guide", "cursor": cursor}),
        ))
        .await;
    second.assert_json(
        200,
        ok(
            2,
            complete(
                SERVER,
                json!({"resources": [{"uri": "skill://docs/guide/references", "name": "references", "mimeType": "inode/directory"}]}),
            ),
        ),
    );
    let bad = w
        .send(Req::modern(
            3,
            "resources/directory/read",
            json!({"uri": "skill://docs/guide", "cursor": "nope"}),
        ))
        .await;
    assert_eq!(bad.json(200)["error"]["code"], -32602);
}

#[tokio::test]
async fn skill_files_are_resources_on_2026() {
    let w = wire();
    let reply = w.send(Req::modern(1, "resources/list", json!({}))).await;
    reply.assert_json(200, ok(1, cached(json!({"resources": listed_files()}))));
    // Text as text, bytes that are not UTF-8 as a blob: the same bytes the digest covers.
    let read = |id: i64, uri: &str| Req::modern(id, "resources/read", json!({"uri": uri}));
    w.send(read(2, "skill://docs/guide/references/a.md"))
        .await
        .assert_json(
            200,
            ok(
                2,
                cached(
                    json!({"contents": [{"uri": "skill://docs/guide/references/a.md",
                    "mimeType": "text/markdown", "text": "A reference.\n"}]}),
                ),
            ),
        );
    w.send(read(3, "skill://solo/assets/dot.png")).await.assert_json(
        200,
        ok(
            3,
            cached(json!({"contents": [{"uri": "skill://solo/assets/dot.png", "mimeType": "image/png",
                "blob": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="}]})),
        ),
    );
    w.send(read(4, "skill://made/SKILL.md")).await.assert_json(
        200,
        ok(
            4,
            cached(json!({"contents": [{"uri": "skill://made/SKILL.md", "mimeType": "text/markdown", "text": MADE}]})),
        ),
    );
    // A dynamic skill's files are read from its source when asked for.
    w.send(read(5, "skill://reports/daily/data/today.csv"))
        .await
        .assert_json(
            200,
            ok(
                5,
                cached(
                    json!({"contents": [{"uri": "skill://reports/daily/data/today.csv",
                    "mimeType": "text/csv", "text": "day,orders\nmonday,12\n"}]}),
                ),
            ),
        );
    for (id, uri) in [
        (6, "skill://solo/assets/none.png"),
        (7, "skill://reports/daily/none.csv"),
        // Out of the skill, or to a file it does not list: its source is never asked.
        (8, "skill://reports/daily/../../etc/passwd"),
        (9, "skill://reports/daily/data/../../x"),
        (10, "skill://reports/daily//etc/passwd"),
        (11, "skill://reports/daily/data//today.csv"),
        (12, "skill://reports/daily/data\\..\\..\\x"),
        (13, "skill://reports/daily/%2e%2e/x"),
        (14, "skill://reports/daily/./SKILL.md"),
        (15, "skill://reports/daily/secret.txt"),
    ] {
        w.send(read(id, uri)).await.assert_json(
            200,
            err(
                id,
                -32602,
                &format!("Resource not found: {uri}"),
                Some(json!({"uri": uri})),
            ),
        );
    }
}

/// A 2025-11-25 client sees the same files as ordinary resources; the extension's methods do
/// not exist in its era.
#[tokio::test]
async fn a_2025_11_25_session_reads_the_skills_as_resources() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    s.send(s.request(1, "resources/list", json!({})))
        .await
        .assert_json(200, ok(1, json!({"resources": listed_files()})));
    s.send(s.request(
        2,
        "resources/read",
        json!({"uri": "skill://docs/guide/deep/SKILL.md"}),
    ))
    .await
    .assert_json(
        200,
        ok(
            2,
            json!({"contents": [{"uri": "skill://docs/guide/deep/SKILL.md", "mimeType": "text/markdown",
                "text": "---\nname: deep\ndescription: Nested in guide.\n---\nDeep.\n"}]}),
        ),
    );
    for (id, method) in [
        (3, "skills/list"),
        (4, "skills/get"),
        (5, "resources/directory/read"),
    ] {
        s.send(s.request(id, method, json!({"uri": "skill://solo/SKILL.md"})))
            .await
            .assert_json(
                200,
                err(id, -32601, &format!("Method not found: {method}"), None),
            );
    }
    // The capabilities of the handshake declare resources, and no extension.
    let (reply, _) = w.initialize("2025-11-25", json!({})).await;
    assert_eq!(
        reply.json(200)["result"]["capabilities"],
        json!({"logging": {}, "resources": {"subscribe": true, "listChanged": true}})
    );
}

/// Start-up refuses a skill defined in code that breaks the rules, naming it.
#[tokio::test]
async fn code_skills_are_checked_at_start_up() {
    let build = |def: SkillDef| {
        Server::from_registry()
            .name("x")
            .skill(def)
            .build()
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        build(SkillDef::new("tools/other").file("SKILL.md", MADE)),
        "skill `tools/other` at Server::skill: SKILL.md's `name` is \"made\", but the skill's directory is \"other\": they must be equal"
    );
    assert_eq!(
        build(SkillDef::new("empty").file("notes.md", "x")),
        "skill `empty` at Server::skill: it has no SKILL.md: add .file(\"SKILL.md\", …)"
    );
    assert_eq!(
        build(SkillDef::new("made").file("SKILL.md", "---\nname: made\n---\n")),
        "skill `made` at Server::skill: SKILL.md: the frontmatter has no `description`: add `description: <what the skill does and when to use it>`"
    );
    assert_eq!(
        build(
            SkillDef::new("made")
                .file("SKILL.md", MADE)
                .file("my file.md", "x")
        ),
        "skill `made/my file.md` at Server::skill: \"my file.md\" has ' ', which a skill:// URI would have to percent-encode; use letters, digits and -._~ in file and directory names"
    );
    // The extension's limits: 512 files, 16 MiB.
    let many = (0..512).fold(SkillDef::new("made").file("SKILL.md", MADE), |d, i| {
        d.file(format!("f{i}.txt"), "x")
    });
    assert_eq!(
        build(many),
        "skill `made` at Server::skill: it has 513 files; a skill has at most 512 (nested skills' files count too)"
    );
    let big = SkillDef::new("made")
        .file("SKILL.md", MADE)
        .file("big.bin", vec![0u8; 16 * 1024 * 1024]);
    assert_eq!(
        build(big),
        "skill `made` at Server::skill: its files hold 16777268 bytes; a skill holds at most 16777216 (16 MiB)"
    );
    // The same URI twice (an embedded file and a code skill's).
    assert_eq!(
        build(
            SkillDef::new("solo").file("SKILL.md", "---\nname: solo\ndescription: Again.\n---\n")
        ),
        "skill `skill://solo/SKILL.md` at Server::skill: tests/tests/wire_skills.rs:14 (wire_skills) serves the same file; a skill:// URI is served once (move one of the skills)"
    );
}
