//! Residency by measured cost: for each trunk layer pinned raw, pinned coded (held coded
//! in RAM, decoded every token) or streamed, and how the memory budget splits between the
//! trunk and the expert cache, whichever gives the fewest seconds per token in this
//! module's time model under the budget.
//!
//! Owns: [`plan_by_cost`], its inputs ([`CostRates`], [`CodedLayers`]), the time model
//! and [`cost_of`], which scores any plan (a prefix plan too) on the same terms. The model,
//! per decoded token, every rate measured on the threads the engine runs on:
//! * drive seconds `io`: each streamed layer's stored bytes (coded size on a coded trunk) ÷
//!   the drive's trunk rate, plus the expert misses at the uniform LRU hit rate
//!   ([`crate::forecast::lru_uniform_hit_rate`]) × expert bytes ÷ its expert rate;
//! * CPU seconds `cpu`: every layer's bytes ÷ the BF16 rate, the head's, `W` experts ÷ the
//!   expert rate, and `raw ÷ decode rate` for every layer decoded each pass (held coded, or
//!   streamed and stored coded): decoding shares the cores with the kernels;
//! * with two ring slots (or none) reads overlap compute: `max(io, cpu)`; with one slot a
//!   layer's read waits for the previous layer's compute and the compute for the read:
//!   `io + cpu`. Measured on k3-mid (3 GB + 1 GB, coded trunk): the two-slot prefix plan
//!   ran at 1.81–2.03 s/token where this model says 2.1, the one-slot plan at 1.84–2.07
//!   where it says 1.9; an earlier per-layer form (`max(read, compute)` per layer, the
//!   expert reads counted whole) said 2.33 and 1.52 and ranked them the wrong way round.
//!
//! The search:
//! * the ring's slot size is tried at each distinct layer size (larger layers must then be
//!   pinned raw, since a layer held coded is also decoded into a ring slot), with one or
//!   two slots, with and without the staging buffers of coded reads;
//! * for each, a 0/1 multiple-choice knapsack by dynamic programming over the bytes left,
//!   in [`GRANULES`] steps (each choice's bytes rounded UP to a step, so a plan never
//!   exceeds its budget, and at most one step per layer is lost). With one slot it
//!   minimises `io + cpu`, which is the model, exactly. With two, `max(io, cpu)` does not
//!   split by layer, so it minimises `io + λ·cpu` for each λ of [`LAMBDAS`] and keeps the
//!   residency whose `max` is least (exact whenever one side dominates, as it does when the
//!   trunk is raw, since then only `io` depends on the residency);
//! * the trunk + cache total is split at the cache's minimum, at the split asked for, and
//!   at [`CACHE_TOKENS`] whole tokens' requests (`W` slots each), which is where the uniform
//!   hit rate steps up (between steps, more cache buys nothing);
//! * ties go to the plan tried first: all pinned, then fewer ring slots, then smaller
//!   slots.
//!
//! Must not: exceed a budget (`trunk_bytes + cache_bytes ≤ trunk budget + cache budget`),
//! pin coded a layer the trunk stores raw, or stream a layer larger than the ring slot.

use crate::error::PlanError;
use crate::forecast::{lru_uniform_hit_rate, ComputeRates, DiskRates};
use crate::memory::{
    cache_slots_for, complete_plan, exact_slot, min_cache_slots, Footprint, LayerResidency, MemoryPlan, PlanRequest,
    TrunkPart,
};
use crate::presets::Budget;

/// Steps the knapsack divides the trunk budget into.
#[cfg(not(fuzzing))]
pub const GRANULES: u64 = 2048;
/// The fuzz build (`cargo fuzz` sets `--cfg fuzzing`) divides it into 128: the same knapsack,
/// rounding and promises at a sixteenth of the work, which under ASan and coverage tracing
/// held `plan_numbers` at 784 inputs/s (perf, 2026-12-07: 70 % of its time in the 576
/// knapsacks of `plan_by_cost`; the release planner's own time is under 1 % of `k3 plan
/// --released --residency cost`).
#[cfg(fuzzing)]
pub const GRANULES: u64 = 128;

/// Whole tokens' requests the cache is tried at (each split is one knapsack per ring shape).
const CACHE_TOKENS: [u64; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];

/// Weights of CPU seconds against drive seconds the two-slot knapsack is run with.
pub const LAMBDAS: [f64; 5] = [1e-6, 0.5, 1.0, 2.0, 1e6];

/// This machine's measured rates, bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostRates {
    pub disk: DiskRates,
    pub compute: ComputeRates,
    /// Decoded bytes per second of the trunk codec on the decoding threads.
    pub decode_bytes_per_second: f64,
}

/// A trunk packed with a codec: what each layer stores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodedLayers<'a> {
    /// Bytes each layer takes in `trunk.bin` (its raw size where it is stored raw),
    /// indexed like `Footprint::layer_trunk_bytes`.
    pub stored_bytes: &'a [u64],
    /// The staging buffers of coded reads, needed while any coded layer streams.
    pub staging_bytes: u64,
}

/// The module's time model of one plan, seconds per token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostFigures {
    /// `max(io, compute)` when overlapped, else `io + compute`.
    pub seconds_per_token: f64,
    pub io_seconds: f64,
    pub compute_seconds: f64,
    /// Of `compute_seconds`, decoding layers held coded or streamed coded.
    pub decode_seconds: f64,
    /// True with two ring slots or none (reads overlap compute).
    pub overlapped: bool,
}

/// Drive and CPU seconds of one token.
#[derive(Debug, Clone, Copy, Default)]
struct Load {
    io: f64,
    cpu: f64,
    decode: f64,
}

impl Load {
    fn plus(self, o: Load) -> Load {
        Load { io: self.io + o.io, cpu: self.cpu + o.cpu, decode: self.decode + o.decode }
    }

    fn figures(self, ring_slots: usize) -> CostFigures {
        let overlapped = ring_slots != 1;
        let seconds_per_token = if overlapped { self.io.max(self.cpu) } else { self.io + self.cpu };
        CostFigures {
            seconds_per_token,
            io_seconds: self.io,
            compute_seconds: self.cpu,
            decode_seconds: self.decode,
            overlapped,
        }
    }
}

/// The chosen plan and its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CostPlan {
    pub plan: MemoryPlan,
    pub figures: CostFigures,
}

/// One layer's costs in the module's model.
#[derive(Debug, Clone, Copy)]
struct LayerCost {
    raw: u64,
    stored: u64,
    compute: f64,
    decode: f64,
    read: f64,
}

impl LayerCost {
    fn coded(&self) -> bool {
        self.stored < self.raw
    }

    fn load(&self, r: LayerResidency) -> Load {
        let decoded = |decode: f64| Load { io: 0.0, cpu: self.compute + decode, decode };
        match r {
            LayerResidency::Pinned => decoded(0.0),
            LayerResidency::PinnedCoded => decoded(self.decode),
            LayerResidency::Streamed if self.coded() => Load { io: self.read, ..decoded(self.decode) },
            LayerResidency::Streamed => Load { io: self.read, ..decoded(0.0) },
        }
    }

    fn bytes(&self, r: LayerResidency) -> u64 {
        match r {
            LayerResidency::Pinned => self.raw,
            LayerResidency::PinnedCoded => self.stored,
            LayerResidency::Streamed => 0,
        }
    }
}

/// A ring shape and what it allows.
#[derive(Debug, Clone, Copy)]
struct Shape {
    slots: usize,
    /// Largest raw layer a slot holds (0 with no slots).
    largest: u64,
    staging: bool,
}

/// The trunk half chosen for one budget: its parts and the whole token's figures.
struct TrunkChoice {
    part: TrunkPart,
    figures: CostFigures,
}

fn positive(what: &'static str, v: f64) -> Result<f64, PlanError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(PlanError::Rate { what, value: v.to_string() })
    }
}

fn layer_costs(fp: &Footprint, rates: &CostRates, coded: Option<CodedLayers>) -> Result<Vec<LayerCost>, PlanError> {
    let bf16 = positive("the BF16 kernel rate", rates.compute.bf16_bytes_per_second)?;
    let read_rate = positive("the drive's trunk read rate", rates.disk.trunk_bytes_per_second)?;
    let decode_rate = match coded {
        Some(_) => positive("the trunk decode rate", rates.decode_bytes_per_second)?,
        None => f64::INFINITY,
    };
    Ok(fp
        .layer_trunk_bytes
        .iter()
        .enumerate()
        .map(|(l, &raw)| {
            let stored = coded.and_then(|c| c.stored_bytes.get(l).copied()).unwrap_or(raw).min(raw);
            LayerCost {
                raw,
                stored,
                compute: raw as f64 / bf16,
                decode: raw as f64 / decode_rate,
                read: stored as f64 / read_rate,
            }
        })
        .collect())
}

/// The residencies a layer may take under `shape`, in tie-break order.
fn allowed(c: &LayerCost, shape: Shape) -> impl Iterator<Item = LayerResidency> {
    let fits_slot = shape.slots > 0 && c.raw <= shape.largest;
    let coded_ok = fits_slot && c.coded();
    let stream_ok = fits_slot && (!c.coded() || shape.staging);
    [(LayerResidency::Pinned, true), (LayerResidency::PinnedCoded, coded_ok), (LayerResidency::Streamed, stream_ok)]
        .into_iter()
        .filter_map(|(r, ok)| ok.then_some(r))
}

/// The multiple-choice knapsack: each layer one of its allowed residencies, the bytes
/// rounded up to steps of `budget / GRANULES`, least `io + lambda × cpu`; `None` when
/// nothing fits.
fn knapsack(costs: &[LayerCost], shape: Shape, budget: u64, lambda: f64) -> Option<Vec<LayerResidency>> {
    let step = budget.div_ceil(GRANULES).max(1);
    let capacity = (budget / step) as usize;
    let weight = |bytes: u64| bytes.div_ceil(step);
    // best[c]: fewest seconds of the layers so far within c steps.
    let mut best = vec![0.0f64; capacity + 1];
    // picks[l][c]: layer l's residency in the best choice within c steps.
    let mut picks: Vec<Vec<LayerResidency>> = Vec::with_capacity(costs.len());
    for cost in costs {
        let options: Vec<(LayerResidency, usize, f64)> = allowed(cost, shape)
            .filter_map(|r| {
                let w = weight(cost.bytes(r));
                let load = cost.load(r);
                (w <= capacity as u64).then_some((r, w as usize, load.io + lambda * load.cpu))
            })
            .collect();
        let mut next = vec![f64::INFINITY; capacity + 1];
        let mut pick = vec![LayerResidency::Streamed; capacity + 1];
        for c in 0..=capacity {
            for &(r, w, s) in &options {
                if w <= c && best[c - w] + s < next[c] {
                    next[c] = best[c - w] + s;
                    pick[c] = r;
                }
            }
        }
        best = next;
        picks.push(pick);
    }
    if !best[capacity].is_finite() {
        return None;
    }
    let mut residency = vec![LayerResidency::Streamed; costs.len()];
    let mut c = capacity;
    for (l, cost) in costs.iter().enumerate().rev() {
        let r = picks[l][c];
        residency[l] = r;
        c -= weight(cost.bytes(r)) as usize;
    }
    Some(residency)
}

/// The fastest trunk residency within `budget` bytes with `fixed` (head and experts) on
/// top, or `None` when none fits.
fn best_trunk(costs: &[LayerCost], budget: u64, staging_bytes: u64, fixed: Load) -> Option<TrunkChoice> {
    let total =
        |residency: &[LayerResidency]| costs.iter().zip(residency).fold(fixed, |load, (c, r)| load.plus(c.load(*r)));
    let raw_total = costs.iter().try_fold(0u64, |a, c| a.checked_add(c.raw));
    let mut best: Option<TrunkChoice> = None;
    if raw_total.is_some_and(|t| t <= budget) {
        let residency = vec![LayerResidency::Pinned; costs.len()];
        let figures = total(&residency).figures(0);
        best = Some(TrunkChoice { part: part(costs, residency, 0, 0, 0), figures });
    }
    let mut sizes: Vec<u64> = costs.iter().map(|c| c.raw).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let any_coded = costs.iter().any(LayerCost::coded);
    for slots in [1usize, 2] {
        let lambdas: &[f64] = if slots == 1 { &[1.0] } else { &LAMBDAS };
        for &largest in &sizes {
            for staging in [false, true] {
                if staging && !any_coded {
                    continue;
                }
                let Some(slot_bytes) = exact_slot(largest) else { continue };
                let fixed_bytes = (slots as u64)
                    .checked_mul(slot_bytes)
                    .and_then(|r| r.checked_add(if staging { staging_bytes } else { 0 }));
                let Some(left) = fixed_bytes.and_then(|f| budget.checked_sub(f)) else { continue };
                let shape = Shape { slots, largest, staging };
                for &lambda in lambdas {
                    let Some(residency) = knapsack(costs, shape, left, lambda) else { continue };
                    let figures = total(&residency).figures(slots);
                    if best.as_ref().is_some_and(|b| b.figures.seconds_per_token <= figures.seconds_per_token) {
                        continue;
                    }
                    let streams_coded =
                        costs.iter().zip(&residency).any(|(c, r)| *r == LayerResidency::Streamed && c.coded());
                    let staged = if streams_coded { staging_bytes } else { 0 };
                    best = Some(TrunkChoice { part: part(costs, residency, slots, slot_bytes, staged), figures });
                }
            }
        }
    }
    best
}

/// The trunk half of a plan for `residency` (a ring only when a layer is not pinned raw).
fn part(
    costs: &[LayerCost],
    residency: Vec<LayerResidency>,
    slots: usize,
    slot_bytes: u64,
    staging_bytes: u64,
) -> TrunkPart {
    let sum = |want: LayerResidency| -> u64 {
        costs.iter().zip(&residency).filter(|(_, r)| **r == want).map(|(c, r)| c.bytes(*r)).sum()
    };
    let needs_ring = residency.iter().any(|r| *r != LayerResidency::Pinned);
    let (ring_slots, ring_slot_bytes) = if needs_ring { (slots, slot_bytes) } else { (0, 0) };
    TrunkPart {
        pinned_bytes: sum(LayerResidency::Pinned),
        pinned_coded_bytes: sum(LayerResidency::PinnedCoded),
        staging_bytes,
        ring_slots,
        ring_slot_bytes,
        piece_eager_bytes: 0,
        residency,
    }
}

/// Cache sizes worth trying within `total`: the minimum, the one asked for, and
/// [`CACHE_TOKENS`] whole tokens' requests (and every expert); none below the minimum.
fn cache_candidates(fp: &Footprint, budget: Budget, slot: u64) -> Vec<u64> {
    let total = budget.trunk_bytes.saturating_add(budget.cache_bytes);
    let most = (total / slot).min(fp.n_experts_total);
    let least = min_cache_slots(fp);
    let requests = fp.expert_requests_per_token().max(1);
    let mut out = vec![least, (budget.cache_bytes / slot).min(fp.n_experts_total)];
    out.extend(CACHE_TOKENS.iter().map(|&m| m.saturating_mul(requests)));
    out.push(fp.n_experts_total);
    out.retain(|&s| s >= least && s <= most);
    out.sort_unstable();
    out.dedup();
    out
}

/// The head's and the experts' drive and CPU seconds of one token with `slots` cache slots.
fn fixed_load(fp: &Footprint, rates: &CostRates, slots: u64) -> Result<Load, PlanError> {
    let head = fp.head_bytes as f64 / positive("the BF16 kernel rate", rates.compute.bf16_bytes_per_second)?;
    let requests = fp.expert_requests_per_token() as f64;
    if requests == 0.0 {
        return Ok(Load { io: 0.0, cpu: head, decode: 0.0 });
    }
    let kernel = positive("the expert kernel rate", rates.compute.expert_bytes_per_second)?;
    let read = positive("the drive's expert read rate", rates.disk.expert_bytes_per_second)?;
    let misses = requests * (1.0 - lru_uniform_hit_rate(slots, fp));
    let bytes = fp.expert_bytes as f64;
    Ok(Load { io: misses * bytes / read, cpu: head + requests * bytes / kernel, decode: 0.0 })
}

/// The module's time model of any plan (a prefix plan from [`crate::plan`] too), so two
/// plans can be compared on the same terms; `trunk_streamed` as the plan was made.
pub fn cost_of(
    fp: &Footprint,
    plan: &MemoryPlan,
    rates: &CostRates,
    coded: Option<CodedLayers>,
    trunk_streamed: bool,
) -> Result<CostFigures, PlanError> {
    let costs = layer_costs(fp, rates, coded)?;
    let trunk = costs.iter().enumerate().fold(Load::default(), |load, (l, c)| {
        let r = match plan.residency.get(l) {
            Some(&r) if trunk_streamed => r,
            _ => LayerResidency::Pinned,
        };
        load.plus(c.load(r))
    });
    let ring_slots = if trunk_streamed { plan.ring_slots } else { 0 };
    Ok(trunk.plus(fixed_load(fp, rates, plan.cache_slots)?).figures(ring_slots))
}

/// The plan of fewest seconds per token for `req`'s budgets taken as one total (see the
/// module docs); without a packed trunk everything is pinned, as [`crate::plan`] does.
pub fn plan_by_cost(
    fp: &Footprint,
    req: &PlanRequest,
    rates: &CostRates,
    coded: Option<CodedLayers>,
) -> Result<CostPlan, PlanError> {
    let costs = layer_costs(fp, rates, coded)?;
    if !req.streamed_trunk {
        let plan = crate::plan(fp, req)?;
        let figures = cost_of(fp, &plan, rates, coded, false)?;
        return Ok(CostPlan { plan, figures });
    }
    let (_, slot) = cache_slots_for(fp, u64::MAX)?;
    let total = req.budget.trunk_bytes.saturating_add(req.budget.cache_bytes);
    let staging_bytes = coded.map_or(0, |c| c.staging_bytes);
    let mut best: Option<(TrunkChoice, u64)> = None;
    for cache_slots in cache_candidates(fp, req.budget, slot) {
        let cache_bytes = cache_slots.saturating_mul(slot);
        let Some(trunk_budget) = total.checked_sub(cache_bytes) else { continue };
        let fixed = fixed_load(fp, rates, cache_slots)?;
        let Some(trunk) = best_trunk(&costs, trunk_budget, staging_bytes, fixed) else { continue };
        let s = |t: &TrunkChoice| t.figures.seconds_per_token;
        if best.as_ref().is_none_or(|(b, _)| s(&trunk) < s(b)) {
            best = Some((trunk, cache_bytes));
        }
    }
    let Some((trunk, cache_bytes)) = best else {
        // What the smallest layer's single ring slot and the smallest cache would need.
        let smallest = fp.layer_trunk_bytes.iter().copied().min().and_then(exact_slot).unwrap_or(u64::MAX);
        let minimum_bytes = smallest.saturating_add(min_cache_slots(fp).saturating_mul(slot));
        return Err(PlanError::TrunkBudgetTooSmall { budget_bytes: total, minimum_bytes });
    };
    let plan = complete_plan(fp, req, cache_bytes, trunk.part)?;
    let figures = cost_of(fp, &plan, rates, coded, true)?;
    Ok(CostPlan { plan, figures })
}
