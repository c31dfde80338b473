//! The memory plan: how a trunk budget splits into pinned layers and ring slots, how a
//! cache budget becomes whole-expert slots, and what the process needs besides.
//!
//! Owns: [`plan`], a pure function of a [`Footprint`] (sizes measured from the checkpoint)
//! and a [`PlanRequest`] (budgets). The engine calls it before reading any weight and
//! refuses to start when the result does not fit the machine.
//! Must not: round budgets up, or let a plan exceed its budgets: `trunk_bytes ≤
//! budget.trunk_bytes` and `cache_bytes ≤ budget.cache_bytes` whenever `plan` succeeds
//! (without a packed trunk the whole trunk is resident, so it must fit the trunk budget).
//! Easy to break: the ring must hold the LARGEST unpinned layer, so pinning more layers
//! can shrink the ring; the pin count is the largest prefix whose cost fits. When layers
//! stream, two ring slots are preferred over one more pinned layer (overlap of reads and
//! compute on every streamed layer beats not reading one layer).
//! Arithmetic: the footprint's figures may be anything (the wasm UI plans numbers no
//! checkpoint produced), so sizes derived from it saturate (a saturated size fits no budget)
//! and every figure of a returned plan is computed exactly, checked: a sum past 64 bits is
//! `PlanError::Overflow`, never a wrapped number that would fit.

use crate::auto::auto_budget_for;
use crate::error::PlanError;
pub use crate::footprint::{
    align_4096, chunk_scratch_bytes, expert_slot_bytes, prefill_chunk, ring_slot_bytes_for, scratch_bytes_for,
    Footprint, LayerResidency, MAX_CONTEXT, MAX_IO_THREADS, MAX_PREFILL_CHUNK, PREFILL_CHUNK,
};
use crate::machine::MachineMemory;
use crate::pieces::piece_ring;
use crate::presets::{Budget, BudgetChoice};
pub(crate) use crate::size::exact_slot;
pub use crate::vocab::{fixed_bytes, fixed_bytes_with};
use crate::vocab::{model_level_bytes, VocabPlacement};

/// What to plan for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanRequest {
    pub budget: Budget,
    /// True when a packed trunk exists, so unpinned layers can stream through a ring.
    pub streamed_trunk: bool,
    /// Positions (prompt + generated) the KV cache is reserved for; the engine refuses
    /// to go past them.
    pub context_length: u64,
    /// Concurrent expert reads, each with its own aligned buffer.
    pub io_threads: u64,
}

/// How memory is used. All sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Each layer's residency, indexed like `Footprint::layer_trunk_bytes`.
    pub residency: Vec<LayerResidency>,
    /// Layers pinned raw ([`LayerResidency::Pinned`]); [`plan`] pins the prefix
    /// `0..pinned_layers`, [`crate::plan_by_cost`] whichever layers pay most.
    pub pinned_layers: usize,
    pub pinned_bytes: u64,
    /// Bytes held coded in RAM by the [`LayerResidency::PinnedCoded`] layers.
    pub pinned_coded_bytes: u64,
    /// Staging buffers of coded reads (only when a layer stored coded streams).
    pub staging_bytes: u64,
    /// Ring slots for unpinned layers: 0 when all are pinned, else 1 or 2 (2 lets the next
    /// layer load while the current one computes). A layer is read straight into a slot's
    /// aligned buffer and computed from there.
    pub ring_slots: usize,
    /// The largest unpinned layer rounded up to 4096, plus one page for an unaligned start;
    /// in a piece ring, the largest piece instead (a layer larger than the slot streams
    /// through it a matrix at a time).
    pub ring_slot_bytes: u64,
    /// The buffers of the small tensors of the layers that stream in pieces (the layer
    /// computing and the one read ahead); 0 when every streamed layer fits a slot whole.
    pub piece_eager_bytes: u64,
    /// Pinned + pinned coded + ring + piece buffers + staging: what the trunk budget pays for.
    pub trunk_bytes: u64,
    pub cache_slots: u64,
    pub cache_slot_bytes: u64,
    /// Cache slots × slot size: what the cache budget pays for.
    pub cache_bytes: u64,
    /// Aligned buffers of the expert reads in flight.
    pub io_buffer_bytes: u64,
    /// Where the embedding table and output head live ([`VocabPlacement::for_trunk`]).
    pub vocab: VocabPlacement,
    /// What they take in RAM there ([`crate::vocab_bytes`]); part of `fixed_bytes`.
    pub vocab_bytes: u64,
    /// Tokens per prefill chunk ([`prefill_chunk`]).
    pub prefill_chunk: u64,
    /// Work buffers of one prefill chunk ([`chunk_scratch_bytes`]); part of `fixed_bytes`.
    pub scratch_bytes: u64,
    /// Model-level tensors (the embeddings and head as `vocab` places them), recurrent
    /// state, KV cache at `context_length`, scratch.
    pub fixed_bytes: u64,
    /// Everything the plan accounts for.
    pub total_bytes: u64,
}

/// Bytes of one ring slot able to hold every layer from `pinned` on (`ring_slot_bytes_for`,
/// exact); `None` past 64 bits.
fn ring_slot(layers: &[u64], pinned: usize) -> Option<u64> {
    match layers[pinned..].iter().copied().max() {
        Some(largest) => exact_slot(largest),
        None => Some(0),
    }
}

/// Trunk cost of pinning `pinned` layers with `slots` ring slots: (pinned, ring); `None`
/// past 64 bits.
fn trunk_cost(layers: &[u64], pinned: usize, slots: u64) -> Option<(u64, u64)> {
    let pinned_bytes = layers[..pinned].iter().try_fold(0u64, |a, &b| a.checked_add(b))?;
    let ring = if pinned == layers.len() { 0 } else { slots.checked_mul(ring_slot(layers, pinned)?)? };
    Some((pinned_bytes, ring))
}

/// `a + b`, or the overflow refusal naming `what`.
pub(crate) fn add(a: u64, b: u64, what: &'static str) -> Result<u64, PlanError> {
    a.checked_add(b).ok_or(PlanError::Overflow { what })
}

/// Computes the plan, or says by how much the budgets fall short. Whole layers stream
/// through the ring when its slot can hold the largest unpinned layer within the budget;
/// otherwise, where the footprint has piece figures, the slot holds the largest piece and
/// larger layers stream through it a matrix at a time.
pub fn plan(fp: &Footprint, req: &PlanRequest) -> Result<MemoryPlan, PlanError> {
    let layers = &fp.layer_trunk_bytes;
    let n = layers.len();
    let budget = req.budget;
    let (pinned, slots, ring_slot_bytes, piece_eager_bytes) = if !req.streamed_trunk {
        let whole = fp.trunk_total_bytes();
        if whole > budget.trunk_bytes {
            return Err(PlanError::TrunkNotPacked { budget_bytes: budget.trunk_bytes, trunk_bytes: whole });
        }
        (n, 0, 0, 0)
    } else {
        let whole = |p: usize, s: u64| trunk_cost(layers, p, s).and_then(|(a, b)| a.checked_add(b));
        let pieces = |p: usize, s: u64| {
            let (slot, eager) = piece_ring(layers, &fp.layer_pieces, p, s)?;
            let pinned_bytes = layers[..p].iter().try_fold(0u64, |a, &b| a.checked_add(b))?;
            pinned_bytes.checked_add(s.checked_mul(slot)?)?.checked_add(eager)
        };
        let piece_figures = |(p, s): (usize, usize)| (p, s, piece_ring(layers, &fp.layer_pieces, p, s as u64));
        let chosen = choose_ring(n, budget.trunk_bytes, whole)
            .map(|(p, s)| (p, s, None))
            .or_else(|| choose_ring(n, budget.trunk_bytes, pieces).map(piece_figures));
        match chosen {
            Some((p, 0, _)) => (p, 0, 0, 0),
            Some((p, s, None)) => (p, s, ring_slot(layers, p).unwrap_or(u64::MAX), 0),
            Some((p, s, Some((slot, eager)))) => (p, s, slot, eager),
            None => {
                return Err(PlanError::TrunkBudgetTooSmall {
                    budget_bytes: budget.trunk_bytes,
                    minimum_bytes: trunk_floor_bytes(fp),
                });
            }
        }
    };
    // The pinned prefix alone (a piece ring's slot is not the whole-layer ring's).
    let pinned_bytes = layers[..pinned]
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b))
        .ok_or(PlanError::Overflow { what: "trunk bytes" })?;

    let residency = LayerResidency::prefix(n, pinned);
    let trunk = TrunkPart {
        residency,
        pinned_bytes,
        pinned_coded_bytes: 0,
        staging_bytes: 0,
        ring_slots: slots,
        ring_slot_bytes,
        piece_eager_bytes,
    };
    complete_plan(fp, req, budget.cache_bytes, trunk)
}

/// The smallest trunk budget a streamed plan exists for: one ring slot for the largest
/// layer, or (where the footprint has piece figures) for the largest piece and one layer's
/// small tensors, whichever is less; `u64::MAX` past 64 bits.
pub fn trunk_floor_bytes(fp: &Footprint) -> u64 {
    let layers = &fp.layer_trunk_bytes;
    let whole = ring_slot(layers, 0).unwrap_or(u64::MAX);
    let pieces = piece_ring(layers, &fp.layer_pieces, 0, 1).and_then(|(slot, eager)| slot.checked_add(eager));
    whole.min(pieces.unwrap_or(u64::MAX))
}

/// (pinned layers, ring slots) under one ring rule: `cost(p, s)` is the trunk bytes of
/// `p` pinned layers and `s` slots, or `None` past 64 bits. The longest prefix that fits with one slot; when layers
/// must stream, a second slot (reading the next while this one computes) is worth more
/// than one more pinned layer, as long as more than one layer streams.
fn choose_ring(n: usize, budget: u64, cost: impl Fn(usize, u64) -> Option<u64>) -> Option<(usize, usize)> {
    let fits = |p: usize, s: u64| cost(p, s).is_some_and(|c| c <= budget);
    let p1 = (0..=n).rev().find(|&p| fits(p, 1))?;
    let p2 = (0..n).rev().find(|&p| fits(p, 2));
    Some(match p2 {
        _ if p1 == n => (n, 0),
        Some(p2) if n - p2 > 1 => (p2, 2),
        _ => (p1, 1),
    })
}

/// The trunk half of a plan, as a planner chose it.
pub(crate) struct TrunkPart {
    pub residency: Vec<LayerResidency>,
    pub pinned_bytes: u64,
    pub pinned_coded_bytes: u64,
    pub staging_bytes: u64,
    pub ring_slots: usize,
    pub ring_slot_bytes: u64,
    pub piece_eager_bytes: u64,
}

/// Expert-cache slots of `cache_budget`, or the refusal when fewer than `top_k + 1` fit:
/// (slots, slot bytes).
pub(crate) fn cache_slots_for(fp: &Footprint, cache_budget: u64) -> Result<(u64, u64), PlanError> {
    let slot = exact_slot(fp.expert_bytes.max(1)).ok_or(PlanError::Overflow { what: "expert slot bytes" })?;
    let min_slots = min_cache_slots(fp);
    let cache_slots = (cache_budget / slot).min(fp.n_experts_total);
    if cache_slots < min_slots {
        return Err(PlanError::CacheBudgetTooSmall {
            budget_bytes: cache_budget,
            minimum_bytes: min_slots.saturating_mul(slot),
            slot_bytes: slot,
            minimum_slots: min_slots,
        });
    }
    Ok((cache_slots, slot))
}

/// The fewest cache slots a plan may have: one token's `top_k` of a layer, plus one.
pub(crate) fn min_cache_slots(fp: &Footprint) -> u64 {
    if fp.n_experts_total == 0 {
        0
    } else {
        fp.top_k.saturating_add(1).min(fp.n_experts_total)
    }
}

/// A plan from its trunk half: the cache of `cache_budget`, the I/O buffers, the fixed
/// needs and the totals (checked).
pub(crate) fn complete_plan(
    fp: &Footprint,
    req: &PlanRequest,
    cache_budget: u64,
    trunk: TrunkPart,
) -> Result<MemoryPlan, PlanError> {
    let (cache_slots, slot) = cache_slots_for(fp, cache_budget)?;
    // Reads land directly in cache slots; an I/O thread needs only a small fallback buffer.
    let io_buffer_bytes = if fp.n_experts_total == 0 {
        0
    } else {
        req.io_threads.checked_mul(2 * 4096).ok_or(PlanError::Overflow { what: "I/O buffer bytes" })?
    };
    let kv =
        fp.kv_bytes_per_position.checked_mul(req.context_length).ok_or(PlanError::Overflow { what: "KV cache" })?;
    let vocab = VocabPlacement::for_trunk(fp, &trunk.residency);
    let vocab_bytes = crate::vocab_bytes(fp, vocab);
    let prefill_chunk = prefill_chunk(fp, req.budget);
    let scratch_bytes =
        chunk_scratch_bytes(fp, prefill_chunk).ok_or(PlanError::Overflow { what: "prefill scratch bytes" })?;
    let fixed_bytes = [fp.state_bytes, kv, scratch_bytes]
        .into_iter()
        .try_fold(model_level_bytes(fp, vocab), |a, b| add(a, b, "fixed bytes"))?;
    let ring_bytes = (trunk.ring_slots as u64)
        .checked_mul(trunk.ring_slot_bytes)
        .ok_or(PlanError::Overflow { what: "ring bytes" })?;
    let trunk_bytes = [trunk.pinned_coded_bytes, ring_bytes, trunk.piece_eager_bytes, trunk.staging_bytes]
        .into_iter()
        .try_fold(trunk.pinned_bytes, |a, b| add(a, b, "trunk bytes"))?;
    // At most the cache budget: cache_slots ≤ budget / slot.
    let cache_bytes = cache_slots * slot;
    let total_bytes = [cache_bytes, io_buffer_bytes, fixed_bytes]
        .into_iter()
        .try_fold(trunk_bytes, |a, b| add(a, b, "total bytes"))?;
    let pinned_layers = trunk.residency.iter().filter(|r| **r == LayerResidency::Pinned).count();
    Ok(MemoryPlan {
        residency: trunk.residency,
        pinned_layers,
        pinned_bytes: trunk.pinned_bytes,
        pinned_coded_bytes: trunk.pinned_coded_bytes,
        staging_bytes: trunk.staging_bytes,
        ring_slots: trunk.ring_slots,
        ring_slot_bytes: trunk.ring_slot_bytes,
        piece_eager_bytes: trunk.piece_eager_bytes,
        trunk_bytes,
        cache_slots,
        cache_slot_bytes: slot,
        cache_bytes,
        io_buffer_bytes,
        vocab,
        vocab_bytes,
        prefill_chunk,
        scratch_bytes,
        fixed_bytes,
        total_bytes,
    })
}

/// Everything that turns a memory choice into a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRequest {
    pub choice: BudgetChoice,
    pub streamed_trunk: bool,
    pub context_length: u64,
    pub io_threads: u64,
}

/// How a plan places the trunk's layers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum ResidencyRule {
    /// [`plan`]: the longest prefix that fits is pinned raw, the rest streams.
    #[default]
    Prefix,
    /// [`crate::plan_by_cost`] at these measured rates: each layer pinned raw, pinned coded
    /// or streamed, and the trunk/cache split, by the fewest seconds per token.
    ByCost(crate::CostRates),
}

/// [`plan`], with the staging buffers of coded reads counted in the trunk budget when a
/// layer `coded` stores coded streams.
fn prefix_plan(fp: &Footprint, req: &PlanRequest, coded: Option<crate::CodedLayers>) -> Result<MemoryPlan, PlanError> {
    let p = plan(fp, req)?;
    let Some(coded) = coded else { return Ok(p) };
    let stored_coded = |l: usize| coded.stored_bytes.get(l).is_some_and(|&s| s < fp.layer_trunk_bytes[l]);
    let streams_coded =
        |p: &MemoryPlan| p.residency.iter().enumerate().any(|(l, r)| *r == LayerResidency::Streamed && stored_coded(l));
    if !streams_coded(&p) {
        return Ok(p);
    }
    let Some(left) = req.budget.trunk_bytes.checked_sub(coded.staging_bytes) else {
        return Err(PlanError::TrunkBudgetTooSmall {
            budget_bytes: req.budget.trunk_bytes,
            minimum_bytes: coded.staging_bytes.saturating_add(p.ring_slot_bytes),
        });
    };
    let smaller = PlanRequest { budget: Budget { trunk_bytes: left, ..req.budget }, ..*req };
    let mut p = plan(fp, &smaller).map_err(|e| match e {
        PlanError::TrunkBudgetTooSmall { minimum_bytes, .. } => PlanError::TrunkBudgetTooSmall {
            budget_bytes: req.budget.trunk_bytes,
            minimum_bytes: minimum_bytes.saturating_add(coded.staging_bytes),
        },
        other => other,
    })?;
    if streams_coded(&p) {
        p.staging_bytes = coded.staging_bytes;
        p.trunk_bytes = add(p.trunk_bytes, coded.staging_bytes, "trunk bytes")?;
        p.total_bytes = add(p.total_bytes, coded.staging_bytes, "total bytes")?;
    }
    Ok(p)
}

/// The plan for `req` on `machine`: `auto` sized from the machine, then [`plan`]; with
/// `refuse_beyond_available`, a plan that needs more than the machine has available is
/// refused with the numbers.
pub fn plan_memory(
    fp: &Footprint,
    req: &MemoryRequest,
    machine: MachineMemory,
    refuse_beyond_available: bool,
) -> Result<MemoryPlan, PlanError> {
    plan_memory_by(fp, req, machine, refuse_beyond_available, (ResidencyRule::Prefix, None))
}

/// [`plan_memory`] under `rule`; `coded` gives a coded trunk's stored layer sizes (the
/// cost rule holds layers coded only where the trunk stores them coded).
pub fn plan_memory_by(
    fp: &Footprint,
    req: &MemoryRequest,
    machine: MachineMemory,
    refuse_beyond_available: bool,
    (rule, coded): (ResidencyRule, Option<crate::CodedLayers>),
) -> Result<MemoryPlan, PlanError> {
    let budget = match req.choice {
        BudgetChoice::Fixed(b) => b,
        BudgetChoice::Auto => auto_budget_for(fp, machine, req.context_length)?,
    };
    let request = PlanRequest {
        budget,
        streamed_trunk: req.streamed_trunk,
        context_length: req.context_length,
        io_threads: req.io_threads,
    };
    let p = match rule {
        ResidencyRule::Prefix => prefix_plan(fp, &request, coded)?,
        ResidencyRule::ByCost(rates) => crate::plan_by_cost(fp, &request, &rates, coded)?.plan,
    };
    let available = machine.usable_available_bytes();
    if refuse_beyond_available && available > 0 && p.total_bytes > available {
        return Err(PlanError::ExceedsAvailable { needed_bytes: p.total_bytes, available_bytes: available });
    }
    Ok(p)
}
