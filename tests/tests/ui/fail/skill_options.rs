sake::skills!("../../../../tests/tests/ui/skills/good", scope("docs:read"));

sake::skills!("../../../../tests/tests/ui/skills/good", scopes("bad scope"));

sake::skills!("../../../../tests/tests/ui/skills/missing");

fn main() {}
