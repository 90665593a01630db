//! Types and completion functions that fixtures of several test binaries share. The fixtures
//! themselves (`#[tool]`, `#[prompt]`, `#[resource]` functions) are in `fixtures/`: see the
//! crate's documentation for why.
