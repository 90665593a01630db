// The path is relative to this file.
sake::skills!("../skills/mismatch");

fn main() {}
