//! Tests only: see tests/ and src/bin/.
