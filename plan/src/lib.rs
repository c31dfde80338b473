//! k3-plan: pure functions over numbers. No I/O, no `unsafe`: the engine, the CLI and
//! (later) the UI compiled to wasm all call the same code, so what the UI shows is what
//! the engine does.
//!
//! Owns: everything that decides memory: which choice fits a machine with what headroom and
//! context ([`advice`]), presets, budget choices and size parsing
//! ([`presets`]), the machine's figures as plain numbers ([`machine`]), how many
//! conversations a plan keeps live at once ([`batch`]), the `auto` rule
//! ([`auto`]), the memory plan with its fixed overheads, slot sizes and KV reservation
//! ([`memory`]), a sequence's state and KV sizes ([`sequence`]), the refusals with their
//! numbers ([`error`]), the offline expert-cache policy simulator ([`cachesim`]), the
//! released K3 footprint derived from the spec's tensor catalogue ([`released`]), where the
//! embedding table and output head live ([`vocab`]), the speed forecast of a plan ([`forecast`]) and the expert-trace format ([`trace`]).
#![forbid(unsafe_code)]

pub mod advice;
pub mod auto;
pub mod batch;
pub mod cachesim;
pub mod cost_plan;
pub mod error;
pub mod footprint;
pub mod forecast;
pub mod machine;
pub mod memory;
pub mod pieces;
pub mod presets;
pub mod released;
pub mod sequence;
pub mod size;
pub mod stats;
pub mod trace;
pub mod vocab;

pub use advice::{
    advise, advise_presets, default_context, headroom_bytes, nearly_full, recommend, Advice, RunShape, BASE_CONTEXT,
    NEARLY_FULL_PERCENT,
};
pub use auto::{auto_budget, auto_budget_for, auto_headroom};
pub use batch::{batch_fit, plan_sequences, BatchFit, MAX_SEQUENCES};
pub use cost_plan::{cost_of, plan_by_cost, CodedLayers, CostFigures, CostPlan, CostRates};
pub use error::PlanError;
pub use forecast::{
    forecast, ByHitRate, ComputeRates, DiskRates, Forecast, ForecastError, ForecastInput, SecondsPerToken, TrunkCoding,
};
pub use machine::{CgroupMemory, MachineMemory};
pub use memory::{
    align_4096, chunk_scratch_bytes, expert_slot_bytes, fixed_bytes, fixed_bytes_with, plan, plan_memory,
    plan_memory_by, prefill_chunk, ring_slot_bytes_for, scratch_bytes_for, trunk_floor_bytes, Footprint,
    LayerResidency, MemoryPlan, MemoryRequest, PlanRequest, ResidencyRule, MAX_CONTEXT, MAX_IO_THREADS,
    MAX_PREFILL_CHUNK, PREFILL_CHUNK,
};
pub use pieces::{is_piece_shape, piece_ring, LayerPieces};
pub use presets::{parse_size, Budget, BudgetChoice, Preset};
pub use released::released_footprint;
pub use size::{format_bytes, format_count, GB};
pub use vocab::{model_level_bytes, vocab_bytes, VocabPlacement, EMBEDDING_CACHE_ROWS, HEAD_CHUNK_BYTES};
