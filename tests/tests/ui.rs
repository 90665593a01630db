//! Compile-time tests of the macros: `tests/ui/pass` must compile (and run), each file of
//! `tests/ui/fail` must fail with exactly the errors in its `.stderr` file.
//!
//! The messages depend on the compiler version; after a toolchain update, regenerate them with
//! `TRYBUILD=overwrite cargo test -p sake-tests --test ui` and read every changed `.stderr` as a
//! user would.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
