//! The desktop app's integration tests (history_crash stays a binary of its own: its SIGKILL
//! campaign times its child processes' starts).
//! One test binary for the crate's integration tests (each file a module): one link instead
//! of one per file, the bulk of a CI build's link time.

mod common;
mod contract;
mod history;
mod history_corrupt;
mod local_api;
mod tools;
mod worker;
