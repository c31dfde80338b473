//! The desktop app's integration tests (the history's are `k3-app`'s, `app/tests/history/`).
//! One test binary for the crate's integration tests (each file a module): one link instead
//! of one per file, the bulk of a CI build's link time.

mod common;
mod contract;
mod local_api;
