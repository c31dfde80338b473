//! Turns budgets into the engine's memory plan, and refuses plans the machine cannot hold.
//!
//! Owns: calling the pure planner (`k3_plan::plan`) on the measured footprint, mapping its
//! errors to `Error::Budget` with the numbers, and comparing the plan with
//! `MemAvailable` when asked to.

use k3_plan::{auto_budget, format_bytes, plan, MachineMemory, MemoryPlan, PlanError, PlanRequest, GB};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::format::TensorIndex;
use crate::generator::{BudgetChoice, MemoryOptions};
use crate::stream::footprint::footprint;

/// The plan for `choice`, checked against the machine when `opts.check_available`.
pub fn make_plan(
    cfg: &ModelConfig,
    index: &TensorIndex,
    choice: BudgetChoice,
    streamed_trunk: bool,
    opts: &MemoryOptions,
) -> Result<MemoryPlan> {
    let fp = footprint(cfg, index)?;
    let budget = match choice {
        BudgetChoice::Fixed(b) => b,
        BudgetChoice::Auto => {
            let machine = MachineMemory {
                total_bytes: mem_total_bytes().unwrap_or(0),
                available_bytes: mem_available_bytes().unwrap_or(0),
            };
            let fixed = fp.resident_bytes + fp.state_bytes + fp.scratch_bytes;
            let min_cache = (fp.top_k + 1) * (fp.expert_bytes + 8192);
            let min_trunk = fp.layer_trunk_bytes.iter().copied().max().unwrap_or(0) + 8192;
            auto_budget(
                machine,
                fixed,
                fp.trunk_total_bytes(),
                min_cache.max(GB / 2).min(fp.n_experts_total * (fp.expert_bytes + 8192)),
                min_trunk,
            )
            .map_err(|e| Error::Budget {
                reason: format!(
                    "auto: {} usable after headroom, at least {} needed",
                    format_bytes(e.usable_bytes),
                    format_bytes(e.needed_bytes)
                ),
            })?
        }
    };
    let req = PlanRequest {
        budget,
        streamed_trunk,
        max_positions: opts.max_positions as u64,
        io_threads: opts.io_threads as u64,
    };
    let p = plan(&fp, &req).map_err(|e| Error::Budget { reason: describe(&e) })?;
    if opts.check_available {
        if let Some(available) = mem_available_bytes() {
            if p.total_bytes > available {
                return Err(Error::Budget {
                    reason: format!(
                        "the plan needs {} but this machine has {} available (lower the budgets or free memory)",
                        format_bytes(p.total_bytes),
                        format_bytes(available)
                    ),
                });
            }
        }
    }
    Ok(p)
}

/// A planner error in words, with the numbers.
pub fn describe(e: &PlanError) -> String {
    match e {
        PlanError::TrunkBudgetTooSmall { budget_bytes, minimum_bytes } => format!(
            "trunk budget {} cannot hold one ring slot; at least {} is needed",
            format_bytes(*budget_bytes),
            format_bytes(*minimum_bytes)
        ),
        PlanError::CacheBudgetTooSmall { budget_bytes, minimum_bytes, slot_bytes, minimum_slots } => format!(
            "cache budget {} holds fewer than {minimum_slots} expert slots of {slot_bytes} bytes; at least {} is needed",
            format_bytes(*budget_bytes),
            format_bytes(*minimum_bytes)
        ),
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    meminfo_field("MemAvailable:")
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
pub fn mem_total_bytes() -> Option<u64> {
    meminfo_field("MemTotal:")
}

fn meminfo_field(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
