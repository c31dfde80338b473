//! The one integration-test binary of k3-desktop: one module per topic.
//! Shared helpers live in the `k3_tests` library (`src/lib.rs`).

#[cfg(feature = "full")]
mod batching;
#[cfg(feature = "full")]
mod chat;
#[cfg(feature = "full")]
mod checkpoint_binding;
mod checkpoint_format;
#[cfg(feature = "full")]
mod config_errors;
#[cfg(feature = "full")]
mod constrained;
mod determinism;
mod expert_crc;
#[cfg(feature = "full")]
mod fuzz_findings;
mod gates;
#[cfg(feature = "full")]
mod generation;
mod hardening;
mod io_faults;
#[cfg(feature = "full")]
mod journal_faults;
#[cfg(feature = "full")]
mod layers;
#[cfg(feature = "full")]
mod mla_forms;
#[cfg(feature = "full")]
mod mxfp4_released;
#[cfg(feature = "full")]
mod ops;
#[cfg(feature = "full")]
mod pack_faults;
mod reader;
#[cfg(feature = "full")]
mod replan;
#[cfg(feature = "full")]
mod residency_cost;
mod resume;
#[cfg(feature = "full")]
mod soak;
#[cfg(feature = "full")]
mod speculation;
mod streaming;
#[cfg(feature = "full")]
mod synth;
#[cfg(feature = "full")]
mod tokenizer;
#[cfg(feature = "full")]
mod trunk;
#[cfg(feature = "full")]
mod trunk_codec;

/// Greedy generation parameters shared by the streaming topics.
pub fn streaming_params(n: usize) -> k3_engine::GenerateParams {
    k3_engine::GenerateParams {
        max_new_tokens: n,
        sampling: k3_engine::Sampling::Greedy,
        stop_ids: vec![],
        mode: k3_engine::DecodeMode::Incremental,
    }
}
