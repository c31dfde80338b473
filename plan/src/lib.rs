//! k3-plan: pure functions over numbers. No I/O, no `unsafe`: the engine, the CLI and
//! (later) the UI compiled to wasm all call the same code, so what the UI shows is what
//! the engine does.
//!
//! Owns: memory presets and size parsing ([`presets`]), the memory plan ([`memory`]) and
//! the offline expert-cache policy simulator ([`cachesim`]).
#![forbid(unsafe_code)]

pub mod cachesim;
pub mod memory;
pub mod presets;

pub use memory::{align_4096, plan, Footprint, MemoryPlan, PlanError, PlanRequest};
pub use presets::{auto_budget, format_bytes, parse_size, Budget, MachineMemory, Preset, GB};
