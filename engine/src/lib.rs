//! k3-engine: runs Kimi K3 (and same-graph checkpoints) exactly, on a CPU.
//!
//! Entry points: [`Engine::load`] reads a model folder (config.json + safetensors shards),
//! validates every tensor, and binds the weights; [`Engine::score`] runs teacher forcing;
//! [`Engine::generate`] prefills and decodes in a [`Session`].
//!
//! Invariants:
//! * One forward pass ([`model::Model::forward`]) serves the CLI, the app and the tests.
//! * One floating-point contract (see [`kernels`]): logits are byte-identical whatever
//!   the thread count, and batched prefill equals token-by-token decoding.
//! * Bad input is a typed [`Error`] naming the file, tensor or field; never a panic and
//!   never a silently substituted default or skipped expert.
//! * No architecture constants: every size comes from `config.json`.

pub mod bench;
pub mod chat;
pub mod constraint;
pub mod engine;
pub mod error;
pub mod events;
/// The config, the checkpoint format and the drive I/O are `k3-io`'s; the engine's paths
/// keep naming them.
pub use k3_io as io;
pub use k3_io::{config, format, json};
pub mod kernels;
pub mod model;
pub mod options;
pub mod resume;
pub mod sampling;
pub mod speculate;
pub mod stream;
pub mod synth;
pub mod tokenizer;

pub use config::{LayerKind, ModelConfig};
pub use engine::{BatchCounters, DecodeMode, Engine, FinishReason, GenerateParams, Generation, Session};
pub use error::{Error, Result};
pub use events::{CancelToken, EventSink, NullSink, TokenEvent};
pub use options::{
    BudgetChoice, EngineOptions, MemoryOptions, ResidencyRule, DEFAULT_CONTEXT_LENGTH, MAX_CONTEXT, MAX_SEQUENCES,
};
pub use sampling::Sampling;
