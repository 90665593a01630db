sake::skills!("../skills/good", scope("docs:read"));

sake::skills!("../skills/good", scopes("bad scope"));

sake::skills!("../skills/missing");

fn main() {}
