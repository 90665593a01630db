// Every error at once, not only the first: two in the directory (a skill named after another
// directory, a file in no skill), two in the scopes.
sake::skills!("../skills/two-errors");

sake::skills!("../skills/good", scopes("bad scope", "docs:read", "also bad"));

fn main() {}
