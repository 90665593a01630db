// The path is relative to this file.
sake::skills!("../skills/no-description");

fn main() {}
