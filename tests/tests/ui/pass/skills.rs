// A skills directory checked and embedded at compile time (the path is relative to this file).
sake::skills!(
    "../skills/good",
    scopes("docs:read")
);

fn main() {
    let embedded: Vec<_> = sake::__private::inventory::iter::<sake::skills::EmbeddedSkills>()
        .collect();
    assert_eq!(embedded.len(), 1);
    let e = embedded[0];
    assert_eq!(e.scopes, ["docs:read"]);
    let paths: Vec<_> = e.files.iter().map(|f| f.path).collect();
    assert_eq!(paths, ["hello/SKILL.md", "hello/assets/greeting.txt"]);
    assert_eq!(e.files[1].bytes, b"hi\n");
    assert_eq!(e.files[1].digest, sake::skills::digest(b"hi\n"));
    assert_eq!(e.skills.len(), 1);
    assert_eq!(e.skills[0].path, "hello");
    assert_eq!(
        e.skills[0].frontmatter,
        r#"{"name":"hello","description":"Says hello."}"#
    );
}
