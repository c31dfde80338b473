//! Turns the engine's memory options into its memory plan.
//!
//! Owns: measuring the footprint, reading the machine (`io::sysinfo`), and calling
//! `k3_plan::plan_memory_by` under the options' residency rule, which decides everything;
//! its refusals become `Error::Budget` with the planner's numbers.
//! Must not: compute any size itself: presets, `auto`, slot sizes, overheads, the KV
//! reservation and each layer's residency are all `k3_plan`'s, so the CLI, the app and the
//! wasm planner agree. A coded trunk's stored sizes and staging bytes come from its manifest.

use k3_plan::{plan_memory_by, BudgetChoice, CodedLayers, Footprint, MachineMemory, MemoryPlan, MemoryRequest};

use crate::error::Result;
use crate::options::MemoryOptions;

/// The plan for `choice`, checked against `machine` when `opts.check_available`; `coded`
/// is a coded trunk's layout ([`crate::stream::trunk_manifest::PackedTrunk::coded_layout`]).
pub fn make_plan(
    fp: &Footprint,
    choice: BudgetChoice,
    (streamed_trunk, coded): (bool, Option<CodedLayers>),
    opts: &MemoryOptions,
    machine: MachineMemory,
) -> Result<MemoryPlan> {
    opts.validate()?;
    let req = MemoryRequest {
        choice,
        streamed_trunk,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
    };
    let fp = fp.for_sequences(opts.sequences as u64);
    Ok(plan_memory_by(&fp, &req, machine, opts.check_available, (opts.residency, coded))?)
}
