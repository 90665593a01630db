// The path is relative to this file.
sake::skills!("../skills/stray");

fn main() {}
