// The path is relative to this file.
sake::skills!("../skills/bad-name");

fn main() {}
