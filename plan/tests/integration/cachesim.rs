//! The cache simulator on hand-made traces with known answers, MIN against an exhaustive
//! search, and MIN against every online policy on pseudo-random traces.

use k3_plan::cachesim::{
    distinct_count, next_uses, requests, simulate, simulate_with, sweep, Policy, PolicyKind, Request, SimError,
    SimResult,
};

/// One layer, the given expert ids: a classic page-reference string.
fn one_layer(experts: &[u32]) -> Vec<Request> {
    experts.iter().map(|&expert| Request { layer: 0, expert }).collect()
}

fn hits(trace: &[Request], capacity: usize, kind: PolicyKind) -> u64 {
    simulate(trace, capacity, kind).expect("policy keeps the contract").hits
}

/// A small deterministic generator (Knuth's MMIX LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u32) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % u64::from(n)) as u32
    }
}

/// `n` requests over `layers` × `experts`, in no particular order.
fn random_trace(rng: &mut Lcg, n: usize, layers: u32, experts: u32) -> Vec<Request> {
    (0..n).map(|_| Request { layer: rng.below(layers), expert: rng.below(experts) }).collect()
}

/// `cycles` passes over `layers` in order, `k` requests per layer from a skewed pool of
/// `experts`: the shape of a decode trace.
fn cyclic_trace(rng: &mut Lcg, cycles: usize, layers: u32, k: usize, experts: u32) -> Vec<Request> {
    let mut trace = Vec::new();
    for _ in 0..cycles {
        for layer in 0..layers {
            for _ in 0..k {
                let expert = rng.below(experts).min(rng.below(experts));
                trace.push(Request { layer, expert });
            }
        }
    }
    trace
}

/// The most hits any eviction sequence can get (every miss inserts): exhaustive search.
fn best_possible(trace: &[Request], capacity: usize, resident: &mut Vec<Request>) -> u64 {
    let Some((&req, rest)) = trace.split_first() else { return 0 };
    if resident.contains(&req) {
        return 1 + best_possible(rest, capacity, resident);
    }
    if capacity == 0 {
        return best_possible(rest, capacity, resident);
    }
    if resident.len() < capacity {
        resident.push(req);
        let best = best_possible(rest, capacity, resident);
        resident.pop();
        return best;
    }
    let mut best = 0;
    for slot in 0..resident.len() {
        let evicted = std::mem::replace(&mut resident[slot], req);
        best = best.max(best_possible(rest, capacity, resident));
        resident[slot] = evicted;
    }
    best
}

#[test]
fn textbook_reference_string_lru_twelve_faults_min_nine() {
    // Silberschatz et al., Operating System Concepts: 3 frames, LRU 12 faults, OPT 9.
    let trace = one_layer(&[7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1]);
    let lru = simulate(&trace, 3, PolicyKind::Lru).unwrap();
    assert_eq!(lru, SimResult { requests: 20, hits: 8, misses: 12 });
    let min = simulate(&trace, 3, PolicyKind::Min).unwrap();
    assert_eq!(min, SimResult { requests: 20, hits: 11, misses: 9 });
    // One layer is one long visit: no layer order to exploit, nothing goes cold, every
    // expert has zero previous-visit uses, so LayerCycle degenerates to LRU.
    assert_eq!(hits(&trace, 3, PolicyKind::LayerCycle), 8);
}

#[test]
fn capacity_zero_misses_every_request() {
    let trace = cyclic_trace(&mut Lcg(1), 3, 4, 5, 6);
    for kind in PolicyKind::ALL {
        let r = simulate(&trace, 0, kind).unwrap();
        assert_eq!((r.hits, r.misses, r.requests), (0, trace.len() as u64, trace.len() as u64), "{kind:?}");
    }
}

#[test]
fn capacity_one_hits_only_immediate_repeats() {
    let trace = one_layer(&[1, 1, 2, 1, 1, 1, 3, 3, 2, 1]);
    let repeats = trace.windows(2).filter(|w| w[0] == w[1]).count() as u64;
    assert_eq!(repeats, 4);
    let mut rng = Lcg(7);
    let random = random_trace(&mut rng, 300, 2, 3);
    let random_repeats = random.windows(2).filter(|w| w[0] == w[1]).count() as u64;
    for kind in PolicyKind::ALL {
        assert_eq!(hits(&trace, 1, kind), repeats, "{kind:?}");
        assert_eq!(hits(&random, 1, kind), random_repeats, "{kind:?}");
    }
}

#[test]
fn enough_capacity_leaves_only_compulsory_misses() {
    let mut rng = Lcg(3);
    for trace in [random_trace(&mut rng, 500, 5, 9), cyclic_trace(&mut rng, 6, 7, 4, 12)] {
        let distinct = distinct_count(&trace);
        for capacity in [distinct, distinct + 1, 10 * distinct] {
            for kind in PolicyKind::ALL {
                let r = simulate(&trace, capacity, kind).unwrap();
                assert_eq!(r.misses, distinct as u64, "{kind:?} at {capacity}");
                assert_eq!(r.hits + r.misses, r.requests);
            }
        }
    }
}

#[test]
fn min_equals_exhaustive_optimum_on_tiny_traces() {
    let mut rng = Lcg(11);
    for _ in 0..60 {
        let trace = random_trace(&mut rng, 11, 2, 3);
        for capacity in 1..=4 {
            let best = best_possible(&trace, capacity, &mut Vec::new());
            assert_eq!(hits(&trace, capacity, PolicyKind::Min), best, "capacity {capacity}, trace {trace:?}");
        }
    }
}

#[test]
fn min_is_never_beaten_on_random_traces() {
    let mut rng = Lcg(2024);
    for round in 0..40 {
        let trace =
            if round % 2 == 0 { random_trace(&mut rng, 400, 4, 8) } else { cyclic_trace(&mut rng, 8, 6, 5, 10) };
        for capacity in [2, 5, 9, 17, 30] {
            let min = hits(&trace, capacity, PolicyKind::Min);
            for kind in [PolicyKind::Lru, PolicyKind::LayerCycle] {
                assert!(min >= hits(&trace, capacity, kind), "{kind:?} beat MIN at {capacity} in round {round}");
            }
        }
    }
}

#[test]
fn layer_cycle_keeps_layers_through_a_cyclic_scan_lru_keeps_nothing() {
    // Layers 0,1,2 × experts 0,1, three passes, 4 slots (working set 6).
    let pass: Vec<(u32, u32)> = (0..3).flat_map(|l| (0..2).map(move |e| (l, e))).collect();
    let trace = requests(&pass.repeat(3));
    assert_eq!(hits(&trace, 4, PolicyKind::Lru), 0, "LRU evicts exactly what the scan needs next");
    // Pass 1: 0 hits; layer 2 evicts layer 1 (the furthest next visit). Pass 2: layers 0 and
    // 2 hit, layer 1 evicts layer 0. Pass 3: layer 0 evicts layer 2, layer 1 hits.
    assert_eq!(hits(&trace, 4, PolicyKind::LayerCycle), 6);
    assert!(hits(&trace, 4, PolicyKind::Min) >= 6);
}

#[test]
fn layer_cycle_evicts_a_cold_expert_before_a_hot_one() {
    // x is not asked for during layer 1's second visit, so it goes cold and is evicted at
    // (0,z) ahead of y, the layer furthest in the cycle; y then hits at the end.
    let (x, y, z, w) = ((1, 10), (2, 20), (0, 30), (1, 40));
    let trace = requests(&[x, y, z, w, y, z, w, y]);
    assert_eq!(hits(&trace, 3, PolicyKind::LayerCycle), 3);
    assert_eq!(hits(&trace, 3, PolicyKind::Lru), 4, "the working set fits: LRU is optimal here");
}

#[test]
fn layer_cycle_remembers_last_visit_counts_of_evicted_experts() {
    // Layer 0's first visit asks for a twice and b once; layer 1 then evicts both. In layer
    // 0's second visit, x must evict one of the re-read a, b: a keeps its count of 2 although
    // it was not resident, so b goes and the final a hits. (Ranked as new, a would be the
    // least recently used and go, like under LRU.)
    let (a, b, x, c, d) = ((0, 1), (0, 2), (0, 3), (1, 4), (1, 5));
    let trace = requests(&[a, a, b, c, d, a, b, x, a]);
    assert_eq!(hits(&trace, 2, PolicyKind::LayerCycle), 2);
    assert_eq!(hits(&trace, 2, PolicyKind::Lru), 1);
}

#[test]
fn next_uses_point_to_the_next_request_for_the_same_expert() {
    let trace = one_layer(&[5, 6, 5, 5, 7]);
    assert_eq!(next_uses(&trace), vec![2, usize::MAX, 3, usize::MAX, usize::MAX]);
}

#[test]
fn sweep_reports_every_policy_at_every_capacity_in_order() {
    let trace = cyclic_trace(&mut Lcg(5), 4, 3, 4, 6);
    let rows = sweep(&trace, &[1, 4, 9], &PolicyKind::ALL).unwrap();
    assert_eq!(rows.iter().map(|r| r.capacity).collect::<Vec<_>>(), vec![1, 4, 9]);
    for row in &rows {
        let kinds: Vec<PolicyKind> = row.results.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, PolicyKind::ALL.to_vec());
        for (kind, r) in &row.results {
            assert_eq!(*r, simulate(&trace, row.capacity, *kind).unwrap());
        }
    }
}

#[test]
fn empty_trace_has_zero_hit_rate() {
    let r = simulate(&[], 4, PolicyKind::Min).unwrap();
    assert_eq!(r, SimResult::default());
    assert_eq!(r.hit_rate(), 0.0);
}

/// Always names an expert that was never inserted.
struct Liar;

impl Policy for Liar {
    fn name(&self) -> &'static str {
        "Liar"
    }
    fn prepare(&mut self, _trace: &[Request]) {}
    fn hit(&mut self, _at: usize, _req: Request) {}
    fn insert(&mut self, _at: usize, _req: Request) {}
    fn evict(&mut self, _at: usize) -> Option<Request> {
        Some(Request { layer: 99, expert: 99 })
    }
}

#[test]
fn a_policy_that_evicts_a_non_resident_expert_is_reported() {
    let trace = one_layer(&[1, 2]);
    let err = simulate_with(&trace, 1, &mut Liar).unwrap_err();
    assert_eq!(err, SimError::InvalidVictim { policy: "Liar", at: 1, victim: Request { layer: 99, expert: 99 } });
    assert!(err.to_string().contains("not resident"));
}
