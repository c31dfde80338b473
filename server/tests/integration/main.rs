//! The API server's integration tests.
//! One test binary for the crate's integration tests (each file a module): one link instead
//! of one per file, the bulk of a CI build's link time.

mod common;
mod generation;
mod security;
