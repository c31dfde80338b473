//! The one integration-test binary of k3-desktop: one module per topic.
//! Shared helpers live in the `k3_tests` library (`src/lib.rs`).

mod chat;
mod checkpoint_binding;
mod checkpoint_format;
mod config_errors;
mod determinism;
mod gates;
mod generation;
mod kernels_twins;
mod layers;
mod mxfp4_released;
mod ops;
mod synth;
mod tokenizer;
