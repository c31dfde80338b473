//! Turns the engine's memory options into its memory plan.
//!
//! Owns: measuring the footprint, reading the machine (`io::sysinfo`), and calling
//! `k3_plan::plan_memory`, which decides everything; its refusals become
//! `Error::Budget` with the planner's numbers.
//! Must not: compute any size itself: presets, `auto`, slot sizes, overheads and the KV
//! reservation are all `k3_plan`'s, so the CLI, the app and the wasm planner agree.

use k3_plan::{plan_memory, BudgetChoice, Footprint, MachineMemory, MemoryPlan, MemoryRequest};

use crate::error::Result;
use crate::options::MemoryOptions;

/// The plan for `choice`, checked against `machine` when `opts.check_available`.
pub fn make_plan(
    fp: &Footprint,
    choice: BudgetChoice,
    streamed_trunk: bool,
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
    Ok(plan_memory(fp, &req, machine, opts.check_available)?)
}
