//! k3-engine: runs Kimi K3 (and same-graph checkpoints) exactly, on a CPU.
//!
//! Entry points: [`Engine::load`] reads a model folder (config.json + safetensors shards),
//! validates every tensor, and binds the weights; [`Engine::score`] runs teacher forcing;
//! [`Engine::generate`] prefills and decodes in a [`Session`].
//!
//! The front door is this root (the engine, sessions, params, options, sampling, `Error`,
//! what streaming reports) and the modules a front end speaks: [`chat`], [`tokenizer`],
//! [`constraint`], [`resume`], [`speculate`], [`events`], and [`tools`] for the commands that
//! plan, forecast and pack without running a model. The insides (kernels, model, streaming,
//! the kernel-rate benches) are [`advanced`], for benches and tests; the checkpoint's config,
//! format and drive I/O are `k3-io`'s.
//!
//! Invariants:
//! * One forward pass ([`advanced::model::Model::forward`]) serves the CLI, the app and the tests.
//! * One floating-point contract (see [`advanced::kernels`]): logits are byte-identical whatever
//!   the thread count, and batched prefill equals token-by-token decoding.
//! * Bad input is a typed [`Error`] naming the file, tensor or field; never a panic and
//!   never a silently substituted default or skipped expert.
//! * No architecture constants: every size comes from `config.json`.

pub mod advanced;
pub mod chat;
pub mod constraint;
mod engine;
pub mod error;
pub mod events;
pub mod options;
pub mod resume;
pub mod sampling;
pub mod speculate;
pub mod tokenizer;
pub mod tools;

// The insides keep their crate paths (`crate::stream::…`); outside they are `advanced::…`.
pub(crate) use advanced::{kernels, model, stream};
// The config, the checkpoint format and the drive I/O are `k3-io`'s (crates that read the
// drive depend on it); the engine's own paths keep naming them.
pub(crate) use k3_io as io;
pub(crate) use k3_io::{config, format, json};

pub use config::{LayerKind, ModelConfig};
pub use engine::{BatchCounters, DecodeMode, Engine, FinishReason, GenerateParams, Generation, Session, MAX_THREADS};
pub use error::{Error, Result};
pub use events::{CancelToken, EventSink, NullSink, TokenEvent};
pub use options::{
    BudgetChoice, EngineOptions, MemoryOptions, ResidencyRule, DEFAULT_CONTEXT_LENGTH, MAX_CONTEXT, MAX_SEQUENCES,
};
pub use sampling::Sampling;
// What streaming reports per token, and the policy a cache may be told to use.
pub use stream::{CachePolicy, Counters, StreamMetrics};
// The install pipeline's last step (`k3 pack`, the wizard) and the measured rates the
// forecasts use.
pub use advanced::bench::{codec_rates::measure_decode_rate, decode_rates::measure_decode_rates};
pub use stream::trunk_manifest::trunk_is_current;
pub use stream::trunk_pack::pack_trunk;
pub use stream::trunk_packer::TrunkPack;
