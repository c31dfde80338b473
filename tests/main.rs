//! The one integration-test binary of k3-desktop: one module per topic.
//! Shared helpers live in the `k3_tests` library (`src/lib.rs`).

mod batching;
mod chat;
mod checkpoint_binding;
mod checkpoint_format;
mod config_errors;
mod constrained;
mod determinism;
mod expert_crc;
mod fuzz_findings;
mod gates;
mod generation;
mod hardening;
mod io_faults;
mod journal_faults;
mod layers;
mod mla_forms;
mod mxfp4_released;
mod ops;
mod pack_faults;
mod reader;
mod replan;
mod residency_cost;
mod resume;
mod soak;
mod speculation;
mod streaming;
mod synth;
mod tokenizer;
mod trunk;
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
