//! sake's client and the skills extension: against sake's own server (list, get, load, read on
//! demand, directories; a 2025-11-25 client sees no extension), and against fake servers whose
//! files do not match their entries (size, digest, frontmatter, unlisted files, invalid
//! entries): the content is refused, and nothing is read that need not be.

use std::time::Duration;

use sake::client::{Client, ClientError, is_directory};
use sake::prelude::*;
use sake::skills::SkillResources;
use sake_tests::fake::{Reply, Seen, discover_result, fake};
use serde_json::{Value, json};

// tests/skills: docs/guide (with the nested skill deep) and solo (with a PNG).
sake::skills!("../../tests/skills");

async fn serve() -> String {
    let service = Server::from_registry()
        .name("skills")
        .version("1.0.0")
        .build()
        .expect("a valid registry");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = service.serve(listener, std::future::pending()).await;
    });
    format!("http://{addr}/mcp")
}

fn builder() -> sake::client::ClientBuilder {
    Client::builder()
        .info("skills-client", "1")
        .timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn lists_loads_and_reads_on_demand() {
    let url = serve().await;
    let client = builder().connect(&url).await.unwrap();
    assert_eq!(client.skills_offered(), Some(true));
    let skills = client.list_skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://docs/guide/SKILL.md",
            "skill://docs/guide/deep/SKILL.md",
            "skill://solo/SKILL.md"
        ]
    );
    let guide = &skills[0];
    assert_eq!(
        (guide.name(), guide.description(), guide.root()),
        (
            "guide",
            "A guide with a nested skill.",
            "skill://docs/guide"
        )
    );
    assert_eq!(client.get_skill(&guide.uri).await.unwrap(), *guide);

    let loaded = client.load_skill(guide).await.unwrap();
    assert_eq!(
        loaded.skill_md(),
        "---\nname: guide\ndescription: A guide with a nested skill.\nlicense: MIT\nmetadata:\n  version: \"1.0\"\n---\n\nRead references/a.md.\n"
    );
    // A relative reference resolves against the skill's root.
    let a = loaded.uri_of("references/a.md");
    assert_eq!(a, "skill://docs/guide/references/a.md");
    assert_eq!(
        client.read_skill_file(&loaded, &a).await.unwrap(),
        b"A reference.\n"
    );
    // A file the entry does not list is refused before any read.
    let unlisted = loaded.uri_of("references/b.md");
    match client.read_skill_file(&loaded, &unlisted).await {
        Err(ClientError::SkillVerification { uri, reason }) => {
            assert_eq!(uri, unlisted);
            assert_eq!(
                reason,
                "the skill's entry does not list this file: refresh it with skills/get"
            );
        }
        other => panic!("{other:?}"),
    }
    // Binary files come as blobs and are verified on their bytes.
    let solo = client.load_skill(&skills[2]).await.unwrap();
    let png = client
        .read_skill_file(&solo, "skill://solo/assets/dot.png")
        .await
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(png.len(), 70);
    // Directories.
    let children = client.read_directory("skill://docs/guide").await.unwrap();
    let listed: Vec<(&str, bool)> = children
        .iter()
        .map(|r| (r.uri.as_str(), is_directory(r)))
        .collect();
    assert_eq!(
        listed,
        [
            ("skill://docs/guide/SKILL.md", false),
            ("skill://docs/guide/deep", true),
            ("skill://docs/guide/references", true)
        ]
    );
}

#[tokio::test]
async fn a_handshake_client_sees_resources_and_no_extension() {
    let url = serve().await;
    let client = builder()
        .revision(sake::Revision::V2025_11_25)
        .connect(&url)
        .await
        .unwrap();
    assert_eq!(client.skills_offered(), None);
    match client.list_skills().await {
        Err(ClientError::Protocol(m)) => assert_eq!(
            m,
            "the server does not declare the skills extension (io.modelcontextprotocol/skills); its skill:// files, if any, are ordinary resources"
        ),
        other => panic!("{other:?}"),
    }
    let resources = client.list_resources().await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "skill://solo/SKILL.md"));
    let read = client.read("skill://solo/SKILL.md").await.unwrap();
    assert_eq!(read.contents[0].uri(), "skill://solo/SKILL.md");
}

// ---------------------------------------------------------------------------------------------
// Servers whose files do not match their entries

const SKILL_MD: &str = "---\nname: pdf\ndescription: PDFs.\n---\nBody.\n";
const FORMS: &str = "Forms.\n";

fn sha(text: &str) -> String {
    sake::skills::digest(text.as_bytes())
}

/// A server of one skill whose entry is `entry` and whose files are `files`.
fn server(entry: Value, files: Vec<(&'static str, String)>) -> impl Fn(&Seen) -> Reply {
    move |seen: &Seen| match seen.method() {
        "server/discover" => {
            let mut d = discover_result();
            d["capabilities"] = json!({"resources": {},
                "extensions": {"io.modelcontextprotocol/skills": {}}});
            Reply::result(seen, d)
        }
        "skills/list" => Reply::result(
            seen,
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skills": [entry]}),
        ),
        "resources/read" => {
            let uri = seen.body["params"]["uri"].as_str().unwrap_or_default();
            let text = files
                .iter()
                .find(|(u, _)| *u == uri)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            Reply::result(
                seen,
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                       "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}),
            )
        }
        _ => Reply::error(200, seen, -32601),
    }
}

fn entry(frontmatter: Value, skill_md: &str) -> Value {
    json!({"uri": "skill://pdf/SKILL.md", "frontmatter": frontmatter, "resources": [
        {"uri": "skill://pdf/SKILL.md", "digest": sha(skill_md), "size": skill_md.len()},
        {"uri": "skill://pdf/FORMS.md", "digest": sha(FORMS), "size": FORMS.len()},
    ]})
}

fn frontmatter() -> Value {
    json!({"name": "pdf", "description": "PDFs."})
}

/// Loads the one skill of the server; returns the refusal and how many files were read.
async fn refused(entry: Value, skill_md: &str) -> (String, usize) {
    let fake = fake(server(
        entry,
        vec![
            ("skill://pdf/SKILL.md", skill_md.to_owned()),
            ("skill://pdf/FORMS.md", "Forms!\n".to_owned()),
        ],
    ))
    .await;
    let client = builder().connect(&fake.url).await.unwrap();
    let skills = client.list_skills().await.unwrap();
    assert_eq!(fake.count("resources/read"), 0, "listing reads nothing");
    let reason = match client.load_skill(&skills[0]).await {
        Err(ClientError::SkillVerification { reason, .. }) => reason,
        Ok(loaded) => match client
            .read_skill_file(&loaded, "skill://pdf/FORMS.md")
            .await
        {
            Err(ClientError::SkillVerification { reason, .. }) => reason,
            other => panic!("{other:?}"),
        },
        Err(e) => panic!("{e}"),
    };
    (reason, fake.count("resources/read"))
}

#[tokio::test]
async fn content_that_does_not_match_its_entry_is_refused() {
    // The supporting file was changed: its digest no longer matches (same size).
    let (reason, reads) = refused(entry(frontmatter(), SKILL_MD), SKILL_MD).await;
    assert_eq!(
        reason,
        format!(
            "the file's digest is {}, the entry says {}",
            sha("Forms!\n"),
            sha(FORMS)
        )
    );
    assert_eq!(reads, 2);
    // SKILL.md has bytes the entry did not count.
    let longer = format!("{SKILL_MD}more\n");
    let (reason, reads) = refused(entry(frontmatter(), SKILL_MD), &longer).await;
    assert_eq!(reason, "the file has 48 bytes, the entry says 43");
    assert_eq!(reads, 1);
    // SKILL.md matches its digest but says something else than the entry's frontmatter.
    let other = "---\nname: pdf\ndescription: Other.\n---\nBody.\n";
    let (reason, reads) = refused(entry(frontmatter(), other), other).await;
    assert_eq!(
        reason,
        "SKILL.md's frontmatter differs from the entry's in description"
    );
    assert_eq!(reads, 1);
    // An entry that breaks the rules is refused before anything is read.
    let mut bad = entry(json!({"name": "other", "description": "PDFs."}), SKILL_MD);
    let (reason, reads) = refused(bad.clone(), SKILL_MD).await;
    assert_eq!(
        reason,
        "the skill's path ends in \"pdf\" but its frontmatter name is \"other\""
    );
    assert_eq!(reads, 0);
    bad = entry(frontmatter(), SKILL_MD);
    bad["resources"][1]["digest"] = json!("sha256:XYZ");
    let (reason, reads) = refused(bad, SKILL_MD).await;
    assert_eq!(
        reason,
        "skill://pdf/FORMS.md has the digest \"sha256:XYZ\", not sha256:<64 hex>"
    );
    assert_eq!(reads, 0);
}

#[tokio::test]
async fn a_dynamic_skill_is_compared_on_its_frontmatter() {
    let dynamic = json!({"uri": "skill://pdf/SKILL.md", "frontmatter": frontmatter(), "resources": "dynamic"});
    let fake = fake(server(
        dynamic,
        vec![("skill://pdf/SKILL.md", SKILL_MD.to_owned())],
    ))
    .await;
    let client = builder().connect(&fake.url).await.unwrap();
    let skills = client.list_skills().await.unwrap();
    assert_eq!(skills[0].resources, SkillResources::Dynamic);
    let loaded = client.load_skill(&skills[0]).await.unwrap();
    assert_eq!(loaded.skill_md(), SKILL_MD);
}
