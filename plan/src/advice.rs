//! Which memory choice fits this machine, with what headroom and what context: the one
//! answer every front end gives (the CLI forecast and `k3 plan`, the doctor, the setup
//! wizard, Settings › Memory, the pressure guard and the page's wasm planner).
//!
//! Owns: the one definition of headroom ([`headroom_bytes`]: the usable available memory —
//! `MemAvailable` capped by what the cgroup has left — minus the plan's total) and of
//! "tight" (headroom below [`auto_headroom`]); a choice's default context
//! ([`default_context`]: the largest, up to [`MAX_CONTEXT`], whose plan keeps the choice's
//! trunk and cache and still leaves `auto_headroom` free); the advice for one choice
//! ([`advise`]) and for every preset ([`advise_presets`]); the recommendation
//! ([`recommend`]: the largest named preset that fits with headroom, else `auto`); when a
//! conversation nears its context limit ([`nearly_full`]).
//! Must not: read the machine, or plan differently from [`plan_memory`].
//! Easy to break: `auto` sizes its budgets from the context, so its default context is
//! taken with the budgets `auto` gives at [`BASE_CONTEXT`], held fixed; every other choice's
//! trunk and cache do not depend on the context, so a plan's total grows by exactly
//! `kv_bytes_per_position` per position.

use crate::auto::{auto_budget_for, auto_headroom};
use crate::error::PlanError;
use crate::machine::MachineMemory;
use crate::memory::{plan_memory, Footprint, MemoryPlan, MemoryRequest, MAX_CONTEXT};
use crate::presets::{BudgetChoice, Preset};

/// Share of the context a conversation may fill before front ends warn that it nears the
/// limit (a reply past the limit ends as "context full").
pub const NEARLY_FULL_PERCENT: u64 = 90;

/// True when `used` positions of a `limit`-position context are at least
/// [`NEARLY_FULL_PERCENT`] of it: the one rule every front end warns by.
pub fn nearly_full(used: u64, limit: u64) -> bool {
    limit > 0 && u128::from(used) * 100 >= u128::from(limit) * u128::from(NEARLY_FULL_PERCENT)
}

/// The context `auto`'s budgets are sized at before its default context is taken.
pub const BASE_CONTEXT: u64 = 4096;

/// How the engine would run, besides the memory choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    /// A packed trunk exists, so layers can stream.
    pub streamed_trunk: bool,
    pub io_threads: u64,
}

/// Usable available memory minus the plan's total (negative: short by that much).
pub fn headroom_bytes(machine: MachineMemory, plan: &MemoryPlan) -> i64 {
    let available = i128::from(machine.usable_available_bytes());
    (available - i128::from(plan.total_bytes)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// One choice's plan on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    pub plan: MemoryPlan,
    /// The context the plan reserves KV cache for.
    pub context_length: u64,
    /// [`headroom_bytes`] of the plan.
    pub headroom_bytes: i64,
    /// The plan fits what is available (headroom ≥ 0).
    pub fits: bool,
    /// It fits with less than `auto`'s headroom left.
    pub tight: bool,
    /// The largest context this choice keeps its trunk and cache at ([`default_context`]);
    /// `None` when even one position leaves less than `auto`'s headroom.
    pub default_context: Option<u64>,
    /// What one more position of context costs.
    pub kv_bytes_per_position: u64,
}

/// `choice` as a budget that does not move with the context: `auto` sized at
/// [`BASE_CONTEXT`], a fixed choice as it is.
fn budget_held(fp: &Footprint, choice: BudgetChoice, machine: MachineMemory) -> Result<BudgetChoice, PlanError> {
    match choice {
        BudgetChoice::Auto => Ok(BudgetChoice::Fixed(auto_budget_for(fp, machine, BASE_CONTEXT)?)),
        fixed => Ok(fixed),
    }
}

fn request(choice: BudgetChoice, shape: RunShape, context_length: u64) -> MemoryRequest {
    MemoryRequest { choice, streamed_trunk: shape.streamed_trunk, context_length, io_threads: shape.io_threads }
}

/// The largest context, up to [`MAX_CONTEXT`], at which `choice`'s plan keeps its trunk and
/// cache and leaves `auto_headroom` free on `machine`; `None` when none does (or the choice
/// is refused).
pub fn default_context(fp: &Footprint, choice: BudgetChoice, shape: RunShape, machine: MachineMemory) -> Option<u64> {
    let held = budget_held(fp, choice, machine).ok()?;
    let one = plan_memory(fp, &request(held, shape, 1), machine, false).ok()?;
    let room = machine.usable_available_bytes().checked_sub(auto_headroom(machine))?;
    let spare = room.checked_sub(one.total_bytes)?;
    let more = spare.checked_div(fp.kv_bytes_per_position).unwrap_or(MAX_CONTEXT);
    Some(more.saturating_add(1).min(MAX_CONTEXT))
}

/// `choice`'s plan at `context_length` (its default context when `None`, or
/// [`BASE_CONTEXT`] when it has none), with its headroom on `machine`. A plan beyond what
/// is available is returned with a negative headroom, not refused.
pub fn advise(
    fp: &Footprint,
    choice: BudgetChoice,
    shape: RunShape,
    machine: MachineMemory,
    context_length: Option<u64>,
) -> Result<Advice, PlanError> {
    let default = default_context(fp, choice, shape, machine);
    let context = context_length.or(default).unwrap_or(BASE_CONTEXT);
    let plan = plan_memory(fp, &request(choice, shape, context), machine, false)?;
    let headroom = headroom_bytes(machine, &plan);
    let reserve = i128::from(auto_headroom(machine));
    Ok(Advice {
        plan,
        context_length: context,
        headroom_bytes: headroom,
        fits: headroom >= 0,
        tight: headroom >= 0 && i128::from(headroom) < reserve,
        default_context: default,
        kv_bytes_per_position: fp.kv_bytes_per_position,
    })
}

/// [`advise`] for every preset, in [`Preset::ALL`] order.
pub fn advise_presets(
    fp: &Footprint,
    shape: RunShape,
    machine: MachineMemory,
    context_length: Option<u64>,
) -> Vec<(Preset, Result<Advice, PlanError>)> {
    Preset::ALL.into_iter().map(|p| (p, advise(fp, p.choice(), shape, machine, context_length))).collect()
}

/// The largest named preset whose plan fits with `auto`'s headroom left, else `auto` when
/// it fits, else `None` — from [`advise_presets`]' rows.
pub fn recommend(rows: &[(Preset, Result<Advice, PlanError>)]) -> Option<Preset> {
    let fits_well = |a: &Advice| a.fits && !a.tight;
    let named = rows.iter().rev().filter(|(p, _)| *p != Preset::Auto);
    let best = named.filter(|(_, a)| a.as_ref().is_ok_and(fits_well)).map(|(p, _)| *p).next();
    best.or_else(|| rows.iter().find(|(p, a)| *p == Preset::Auto && a.as_ref().is_ok_and(|a| a.fits)).map(|(p, _)| *p))
}
