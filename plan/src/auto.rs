//! The `auto` preset: budgets sized from what the machine has.
//!
//! Owns: the headroom `auto` keeps free, the rule of spec §11 generalised to any model
//! ([`auto_budget`]), and its inputs taken from a [`Footprint`] ([`auto_budget_for`]):
//! the fixed needs (model-level tensors, state, KV for the context length, scratch), the
//! smallest useful cache and the smallest trunk (one ring slot).
//! Must not: read the machine: the caller passes [`MachineMemory`] (wasm builds this crate).
//! Easy to break: the minimums here must be the planner's own ([`expert_slot_bytes`],
//! [`ring_slot_bytes_for`]), or `auto` picks a budget [`crate::plan`] then refuses.

use crate::error::PlanError;
use crate::footprint::{expert_slot_bytes, ring_slot_bytes_for, Footprint};
use crate::machine::MachineMemory;
use crate::presets::Budget;
use crate::size::GB;
use crate::vocab::fixed_bytes_with;
use crate::vocab::VocabPlacement;

/// Memory kept free by `auto` beyond the model's fixed needs: 2 GB plus 2 % of what is
/// available (spec §11's reserve, with the model's own fixed bytes in place of K3's).
pub fn auto_headroom(machine: MachineMemory) -> u64 {
    2 * GB + machine.usable_available_bytes() / 50
}

/// The `auto` rule of spec §11, generalised from K3's numbers to any model:
/// `usable = available − headroom − fixed`; if the whole trunk plus the smallest useful
/// cache fits, take the whole trunk and give the rest to the cache; else keep a small
/// cache (`min_cache_bytes`) and give the trunk the rest, capped at 55 % of total memory.
pub fn auto_budget(
    machine: MachineMemory,
    fixed_bytes: u64,
    trunk_total_bytes: u64,
    min_cache_bytes: u64,
    min_trunk_bytes: u64,
) -> Result<Budget, PlanError> {
    let reserve = auto_headroom(machine).saturating_add(fixed_bytes);
    let usable = machine.usable_available_bytes().saturating_sub(reserve);
    let needed = min_cache_bytes.saturating_add(min_trunk_bytes);
    if usable < needed {
        return Err(PlanError::AutoTooSmall { usable_bytes: usable, needed_bytes: needed });
    }
    if usable - min_cache_bytes >= trunk_total_bytes {
        return Ok(Budget { trunk_bytes: trunk_total_bytes, cache_bytes: usable - trunk_total_bytes });
    }
    let share = (machine.usable_total_bytes() as f64 * 0.55) as u64;
    let cap = share.saturating_sub(reserve).saturating_sub(min_cache_bytes).max(min_trunk_bytes);
    Ok(Budget { trunk_bytes: (usable - min_cache_bytes).min(cap), cache_bytes: min_cache_bytes })
}

/// `auto` for the model of `fp` with KV reserved for `context_length` positions: the
/// smallest useful cache is top-k + 1 slots (at least 0.5 GB when the model has that many
/// experts), the smallest trunk one ring slot for the largest layer.
pub fn auto_budget_for(fp: &Footprint, machine: MachineMemory, context_length: u64) -> Result<Budget, PlanError> {
    let slot = expert_slot_bytes(fp.expert_bytes);
    // Saturating: a minimum past 64 bits fits no machine, and `auto_budget` refuses it.
    let min_cache =
        fp.top_k.saturating_add(1).saturating_mul(slot).max(GB / 2).min(fp.n_experts_total.saturating_mul(slot));
    let largest_layer = fp.layer_trunk_bytes.iter().copied().max().unwrap_or(0);
    let total = fp.trunk_total_bytes();
    let budget_with = |vocab| {
        let fixed = fixed_bytes_with(fp, context_length, vocab);
        auto_budget(machine, fixed, total, min_cache, ring_slot_bytes_for(largest_layer))
    };
    // The whole trunk with the embeddings and head held, when that fits; else a trunk that
    // streams, which reads the embeddings and head when used (`VocabPlacement::for_trunk`)
    // and so leaves their RAM to the trunk and cache. That budget stays below the whole
    // trunk, so the plan made from it streams, as its fixed bytes assumed.
    match budget_with(VocabPlacement::Held) {
        Ok(held) if held.trunk_bytes >= total => Ok(held),
        held => match budget_with(VocabPlacement::Read) {
            Ok(read) => Ok(Budget { trunk_bytes: read.trunk_bytes.min(total.saturating_sub(1)), ..read }),
            Err(_) => held,
        },
    }
}
