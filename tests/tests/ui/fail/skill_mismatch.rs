// The path is relative to the crate being compiled: trybuild's, in target/tests/trybuild/.
sake::skills!("../../../../tests/tests/ui/skills/mismatch");

fn main() {}
