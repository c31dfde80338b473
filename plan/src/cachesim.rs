//! Offline expert-cache policy simulator (spec §10): replays a recorded trace of routed-expert
//! requests against a cache of `capacity` whole-expert slots (counted across all layers) and
//! counts hits, so cache sizes and replacement policies can be compared without a model.
//!
//! Owns: [`Request`], the [`Policy`] trait, three policies — [`Lru`], [`Belady`] (MIN, the
//! offline optimum) and [`LayerCycle`] (our online policy) — and [`simulate`] / [`sweep`].
//!
//! Must not: do I/O (the CLI reads `expert_trace.bin` and hands over pairs), depend on any
//! crate, or let a policy decide what counts as a hit. [`simulate`] alone owns the resident
//! set and applies one rule to every policy: a request is a hit only when its expert was
//! resident before the request; a miss inserts it, evicting the policy's victim when full.
//!
//! Easy to break:
//! * MIN's lazy heap: an entry is valid only while its next-use index equals the resident's
//!   current one (a stale entry for a resident key must be skipped, not evicted).
//! * `LayerCycle` must close a layer's visit *before* choosing a victim for the next layer's
//!   first miss, or the layer just used still looks "current" and is evicted last.
//! * Every policy's `prepare` must reset all state: [`sweep`] reuses nothing, but callers may.
//! * `LayerCycle` ranks an expert it (re-)inserts by its layer's last-visit count, not 0:
//!   ranking re-inserted experts as new costs the whole gain at 56 slots.
//!
//! # Why `LayerCycle` beats LRU
//!
//! A decode (or recompute) step asks for layers 1..=92 in order, top-16 experts each, then
//! starts again at layer 1: a cyclic scan whose working set (~5,700–10,000 experts per pass in
//! the released trace; 1,472 per token when decoding incrementally) is far larger than the
//! cache. LRU is the worst possible policy for a cyclic scan: the expert it evicts is always
//! the one from the layer that comes next, so across passes it keeps nothing — on the released
//! trace every LRU hit is a repeat *within* one layer's visit (36.24 % is exactly the
//! within-visit ceiling), from 570 up to 4,000 slots.
//!
//! The layer order is known in advance, so the next visit of every layer is known even though
//! the experts it will route to are not. `LayerCycle` is MIN at layer granularity:
//! 1. **Cold first.** An expert not used during its layer's most recent visit is "cold" (a
//!    stale routing choice); cold experts are evicted first, least recently used first. This
//!    is the recency component: in incremental decoding it keeps the last token's experts,
//!    which is what makes LRU good once the cache exceeds one token's working set.
//! 2. **Then the layer used furthest in the future.** Among "hot" experts (used in their
//!    layer's latest visit), evict from the resident layer whose next turn in the cyclic order
//!    is furthest away: the largest layer below the current one, else the largest above it,
//!    and the current layer last. The effect is that a fixed block of layers stays resident
//!    pass after pass instead of being flushed by the scan.
//! 3. **Within that layer, fewest uses in its last visit, then least recently used.** Experts
//!    many positions routed to come back first. The counts of a layer's last visit are kept
//!    for every expert it asked for, resident or not (a few counters per expert, ~10,000 on
//!    the released trace), so an expert re-read after eviction gets its rank back. At 56 slots,
//!    where one layer's visit (62–109 distinct experts in the recompute trace) overflows the
//!    cache and the victim is always in the current layer, this is what lifts the policy
//!    above LRU (and at 16–32 slots by 2–10 points).
//!
//! Released trace (recompute run, 100,096 requests, 10,010 distinct; hit %):
//!
//! | slots | LRU | MIN | LayerCycle | layer order alone (rule 2, LRU within) |
//! |---:|---:|---:|---:|---:|
//! | 56 | 35.33 | 36.52 | 35.88 | 35.33 |
//! | 570 | 36.24 | 40.22 | 39.92 | 39.92 |
//! | 740 | 36.24 | 41.41 | 41.13 | 41.13 |
//! | 1,700 | 36.24 | 48.13 | 47.84 | 47.84 |
//! | 4,000 | 36.24 | 64.21 | 63.93 | 63.93 |
//!
//! Rule 1 changes nothing on that trace (a recompute pass re-routes every earlier position
//! identically, so nothing goes cold) but matters for incremental decoding, which is how the
//! engine decodes: on an incremental trace rebuilt from the released trace's last pass (12
//! tokens × 92 layers × 16, 17,664 requests), rules 2–3 alone lose to LRU at 1,700 and 2,000
//! slots (28.8 and 30.8 vs 31.5 %) because they evict the last token's experts; with rule 1
//! LayerCycle equals LRU there (31.5 %) and at 4,000 (39.3 %), and beats it below one
//! token's working set of 1,472 (570: 9.0 vs 0.0 %, 740: 13.5 vs 0.0 %; MIN 29.2 / 33.3 %).
//! Also tried: LFU by global count (worse than LRU at 56: 33.1 %) and MRU within the current
//! layer (24.0 %). The remaining gap to MIN is MIN choosing *which* experts of the kept
//! layers to hold, which needs the future.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::fmt;

// Fx hashing: the keys are small integers the simulator made, not input an attacker picks
// (SipHash's defence), and SipHash was the replay's largest cost.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// One routed-expert request: `layer` as recorded in the trace, `expert` within the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    pub layer: u32,
    pub expert: u32,
}

impl From<(u32, u32)> for Request {
    fn from((layer, expert): (u32, u32)) -> Self {
        Request { layer, expert }
    }
}

/// Converts `(layer, expert)` pairs, as the CLI reads them, into requests.
pub fn requests(pairs: &[(u32, u32)]) -> Vec<Request> {
    pairs.iter().map(|&p| Request::from(p)).collect()
}

/// How many different experts the trace asks for: the compulsory misses of any policy.
pub fn distinct_count(trace: &[Request]) -> usize {
    trace.iter().collect::<HashSet<_>>().len()
}

/// The outcome of one replay. `hits + misses == requests`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimResult {
    pub requests: u64,
    pub hits: u64,
    pub misses: u64,
}

impl SimResult {
    /// Hits as a fraction of requests (0 for an empty trace).
    pub fn hit_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.hits as f64 / self.requests as f64
        }
    }
}

/// A policy broke the simulator's contract; always a bug in that policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The cache was full and the policy named no victim.
    NoVictim { policy: &'static str, at: usize },
    /// The policy named a victim that is not resident.
    InvalidVictim { policy: &'static str, at: usize, victim: Request },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::NoVictim { policy, at } => {
                write!(f, "policy {policy} named no victim for a full cache at request {at}")
            }
            SimError::InvalidVictim { policy, at, victim } => write!(
                f,
                "policy {policy} evicted layer {} expert {} at request {at}, which is not resident",
                victim.layer, victim.expert
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// A replacement policy. It tracks only the ordering it needs; [`simulate`] owns residency
/// and calls, per request `at`: `observe`, then `hit` (resident) or, on a miss with a
/// non-zero capacity, `evict` (only when full) followed by `insert`.
pub trait Policy {
    /// Short name for tables and errors.
    fn name(&self) -> &'static str;
    /// Forgets all state and sees the whole trace (only an offline policy may use it).
    fn prepare(&mut self, trace: &[Request]);
    /// Sees every request before the hit test.
    fn observe(&mut self, _at: usize, _req: Request) {}
    /// `req` was resident.
    fn hit(&mut self, at: usize, req: Request);
    /// `req` was just made resident.
    fn insert(&mut self, at: usize, req: Request);
    /// Chooses a resident victim, forgets it and returns it (`None` only if it tracks none).
    fn evict(&mut self, at: usize) -> Option<Request>;
}

/// The policies this module provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    Lru,
    Min,
    LayerCycle,
}

impl PolicyKind {
    /// Every policy, in table order.
    pub const ALL: [PolicyKind; 3] = [PolicyKind::Lru, PolicyKind::Min, PolicyKind::LayerCycle];

    /// Machine-readable name (JSON keys).
    pub fn label(self) -> &'static str {
        match self {
            PolicyKind::Lru => "lru",
            PolicyKind::Min => "min",
            PolicyKind::LayerCycle => "layer_cycle",
        }
    }

    /// A fresh policy object.
    pub fn build(self) -> Box<dyn Policy> {
        match self {
            PolicyKind::Lru => Box::<Lru>::default(),
            PolicyKind::Min => Box::<Belady>::default(),
            PolicyKind::LayerCycle => Box::<LayerCycle>::default(),
        }
    }
}

/// Replays `trace` against `capacity` slots under a fresh policy of kind `kind`.
pub fn simulate(trace: &[Request], capacity: usize, kind: PolicyKind) -> Result<SimResult, SimError> {
    simulate_with(trace, capacity, kind.build().as_mut())
}

/// Replays `trace` against `capacity` slots under `policy` (which is reset first).
pub fn simulate_with(trace: &[Request], capacity: usize, policy: &mut dyn Policy) -> Result<SimResult, SimError> {
    policy.prepare(trace);
    let mut resident: HashSet<Request> =
        HashSet::with_capacity_and_hasher(capacity.min(trace.len()), Default::default());
    let mut result = SimResult { requests: trace.len() as u64, ..SimResult::default() };
    for (at, &req) in trace.iter().enumerate() {
        policy.observe(at, req);
        if resident.contains(&req) {
            result.hits += 1;
            policy.hit(at, req);
            continue;
        }
        result.misses += 1;
        if capacity == 0 {
            continue;
        }
        if resident.len() >= capacity {
            make_room(&mut resident, policy, at)?;
        }
        resident.insert(req);
        policy.insert(at, req);
    }
    Ok(result)
}

/// Removes the policy's victim from `resident`, checking the policy named a resident one.
fn make_room(resident: &mut HashSet<Request>, policy: &mut dyn Policy, at: usize) -> Result<(), SimError> {
    let name = policy.name();
    let victim = policy.evict(at).ok_or(SimError::NoVictim { policy: name, at })?;
    if resident.remove(&victim) {
        Ok(())
    } else {
        Err(SimError::InvalidVictim { policy: name, at, victim })
    }
}

/// Every policy's result at one capacity, in the order the policies were asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    pub capacity: usize,
    pub results: Vec<(PolicyKind, SimResult)>,
}

/// Runs every policy in `policies` at every capacity in `capacities`.
pub fn sweep(trace: &[Request], capacities: &[usize], policies: &[PolicyKind]) -> Result<Vec<SweepRow>, SimError> {
    capacities
        .iter()
        .map(|&capacity| {
            let results = policies
                .iter()
                .map(|&kind| simulate(trace, capacity, kind).map(|r| (kind, r)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(SweepRow { capacity, results })
        })
        .collect()
}

/// Least recently used: evicts the resident whose last request is oldest.
#[derive(Default)]
pub struct Lru {
    stamp: HashMap<Request, usize>,
    order: BTreeSet<(usize, Request)>,
}

impl Lru {
    fn touch(&mut self, at: usize, req: Request) {
        if let Some(old) = self.stamp.insert(req, at) {
            self.order.remove(&(old, req));
        }
        self.order.insert((at, req));
    }
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "LRU"
    }
    fn prepare(&mut self, _trace: &[Request]) {
        *self = Lru::default();
    }
    fn hit(&mut self, at: usize, req: Request) {
        self.touch(at, req);
    }
    fn insert(&mut self, at: usize, req: Request) {
        self.touch(at, req);
    }
    fn evict(&mut self, _at: usize) -> Option<Request> {
        let (_, victim) = self.order.pop_first()?;
        self.stamp.remove(&victim);
        Some(victim)
    }
}

/// "Never requested again": later than any request index.
const NEVER: usize = usize::MAX;

/// For each request, the index of the next request for the same expert, or [`NEVER`].
pub fn next_uses(trace: &[Request]) -> Vec<usize> {
    let mut next = vec![NEVER; trace.len()];
    let mut seen: HashMap<Request, usize> = HashMap::default();
    for (at, &req) in trace.iter().enumerate().rev() {
        if let Some(later) = seen.insert(req, at) {
            next[at] = later;
        }
    }
    next
}

/// Belady's MIN (offline optimum for hit count when every miss must insert): evicts the
/// resident whose next request is furthest in the future. O(n log n): precomputed next-use
/// indices and a max-heap with lazy deletion.
#[derive(Default)]
pub struct Belady {
    next_use: Vec<usize>,
    /// Resident expert → the index of its next request.
    resident: HashMap<Request, usize>,
    heap: BinaryHeap<(usize, Request)>,
}

impl Belady {
    fn schedule(&mut self, at: usize, req: Request) {
        let next = self.next_use.get(at).copied().unwrap_or(NEVER);
        self.resident.insert(req, next);
        self.heap.push((next, req));
    }
}

impl Policy for Belady {
    fn name(&self) -> &'static str {
        "MIN"
    }
    fn prepare(&mut self, trace: &[Request]) {
        *self = Belady { next_use: next_uses(trace), ..Belady::default() };
    }
    fn hit(&mut self, at: usize, req: Request) {
        self.schedule(at, req);
    }
    fn insert(&mut self, at: usize, req: Request) {
        self.schedule(at, req);
    }
    fn evict(&mut self, _at: usize) -> Option<Request> {
        while let Some((next, req)) = self.heap.pop() {
            // Next-use indices of one expert strictly increase, so equality means current.
            if self.resident.get(&req) == Some(&next) {
                self.resident.remove(&req);
                return Some(req);
            }
        }
        None
    }
}

/// What `LayerCycle` knows about one resident expert.
#[derive(Clone, Copy, Debug)]
struct Entry {
    last_use: usize,
    /// Requests for it during its layer's most recent completed visit.
    prev_uses: u32,
    cold: bool,
}

/// Hot-set order within a layer: fewest previous-visit uses, then oldest, then expert id.
type HotKey = (u32, usize, u32);

/// The online policy of the module header: cold experts first (LRU), then the hot experts
/// of the layer whose next visit is furthest in the cyclic layer order, fewest uses in that
/// layer's last visit first (counts remembered for non-resident experts too). A visit is a
/// maximal run of consecutive requests for one layer; layers are assumed to be visited in
/// increasing order, wrapping around (any other order is still simulated correctly, only
/// ranked worse).
#[derive(Default)]
pub struct LayerCycle {
    entries: HashMap<Request, Entry>,
    /// Layer → its hot residents. A layer with none has no key.
    hot: BTreeMap<u32, BTreeSet<HotKey>>,
    /// Cold residents by (last use, request).
    cold: BTreeSet<(usize, Request)>,
    /// The layer being visited and how often each of its experts was asked for so far.
    visit: Option<u32>,
    visit_uses: HashMap<u32, u32>,
    /// Layer → expert → requests during that layer's last completed visit, resident or not
    /// (an expert re-inserted after eviction gets its rank back).
    history: HashMap<u32, HashMap<u32, u32>>,
}

impl LayerCycle {
    /// Re-ranks the layer's hot residents by this visit's use counts; unused ones go cold.
    fn close_visit(&mut self, layer: u32) {
        let Some(residents) = self.hot.remove(&layer) else { return };
        let mut still_hot = BTreeSet::new();
        for (_, last_use, expert) in residents {
            let req = Request { layer, expert };
            let uses = self.visit_uses.get(&expert).copied().unwrap_or(0);
            if let Some(entry) = self.entries.get_mut(&req) {
                entry.prev_uses = uses;
                entry.cold = uses == 0;
            }
            if uses == 0 {
                self.cold.insert((last_use, req));
            } else {
                still_hot.insert((uses, last_use, expert));
            }
        }
        if !still_hot.is_empty() {
            self.hot.insert(layer, still_hot);
        }
    }

    /// Ends the visit of `layer`: re-ranks its residents and keeps its counts as history.
    fn end_visit(&mut self, layer: u32) {
        self.close_visit(layer);
        self.history.insert(layer, std::mem::take(&mut self.visit_uses));
    }

    /// Requests for `req` during its layer's last completed visit.
    fn previous_uses(&self, req: Request) -> u32 {
        self.history.get(&req.layer).and_then(|h| h.get(&req.expert)).copied().unwrap_or(0)
    }

    /// Takes `req` out of whichever set holds it.
    fn unlink(&mut self, req: Request, entry: Entry) {
        if entry.cold {
            self.cold.remove(&(entry.last_use, req));
        } else if let Some(set) = self.hot.get_mut(&req.layer) {
            set.remove(&(entry.prev_uses, entry.last_use, req.expert));
            if set.is_empty() {
                self.hot.remove(&req.layer);
            }
        }
    }

    /// Records `req` as hot and last used at `at`.
    fn link_hot(&mut self, at: usize, req: Request, prev_uses: u32) {
        self.entries.insert(req, Entry { last_use: at, prev_uses, cold: false });
        self.hot.entry(req.layer).or_default().insert((prev_uses, at, req.expert));
    }

    /// The resident layer visited furthest in the future: the largest below the current
    /// layer, else the largest above it, else the current layer.
    fn furthest_hot_layer(&self) -> Option<u32> {
        let current = self.visit.unwrap_or(0);
        let below = self.hot.range(..current).next_back();
        below.or_else(|| self.hot.range(current..).next_back()).map(|(&layer, _)| layer)
    }

    fn evict_hot(&mut self) -> Option<Request> {
        let layer = self.furthest_hot_layer()?;
        let set = self.hot.get_mut(&layer)?;
        let (_, _, expert) = set.pop_first()?;
        if set.is_empty() {
            self.hot.remove(&layer);
        }
        Some(Request { layer, expert })
    }
}

impl Policy for LayerCycle {
    fn name(&self) -> &'static str {
        "LayerCycle"
    }
    fn prepare(&mut self, _trace: &[Request]) {
        *self = LayerCycle::default();
    }
    fn observe(&mut self, _at: usize, req: Request) {
        if self.visit != Some(req.layer) {
            if let Some(done) = self.visit {
                self.end_visit(done);
            }
            self.visit = Some(req.layer);
            self.visit_uses.clear();
        }
        *self.visit_uses.entry(req.expert).or_insert(0) += 1;
    }
    fn hit(&mut self, at: usize, req: Request) {
        let Some(entry) = self.entries.get(&req).copied() else { return };
        self.unlink(req, entry);
        self.link_hot(at, req, entry.prev_uses);
    }
    fn insert(&mut self, at: usize, req: Request) {
        let prev_uses = self.previous_uses(req);
        self.link_hot(at, req, prev_uses);
    }
    fn evict(&mut self, _at: usize) -> Option<Request> {
        let victim = match self.cold.pop_first() {
            Some((_, req)) => Some(req),
            None => self.evict_hot(),
        }?;
        self.entries.remove(&victim);
        Some(victim)
    }
}
