//! The `k3` command's integration tests.
//! One test binary for the crate's integration tests (each file a module): one link instead
//! of one per file, the bulk of a CI build's link time.

mod bench;
mod chat_state;
mod cli;
mod context;
mod download;
mod download_durability;
mod download_support;
// The test CA is trusted through SSL_CERT_FILE, which the platform verifier reads on Linux.
#[cfg(target_os = "linux")]
mod download_tls;
mod forecast;
mod plan_wasm;
mod run_sampling;
mod serve;
mod sim_cache;
mod synth;
