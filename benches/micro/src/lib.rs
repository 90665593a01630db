//! Tools registered for the micro-benchmarks live in the bench file itself.
