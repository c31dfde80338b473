//! The cost planner: it never exceeds a budget, it is within one rounding step per layer
//! of an exhaustive search, and it picks each residency where the measured rates make it
//! pay (pinned coded under a slow drive and a fast decoder, never with a slow decoder).

use k3_plan::{
    cost_of, plan, plan_by_cost, plan_memory_by, released_footprint, Budget, BudgetChoice, CodedLayers, ComputeRates,
    CostRates, DiskRates, Footprint, LayerResidency, MachineMemory, MemoryPlan, MemoryRequest, PlanRequest,
    ResidencyRule, GB,
};

const MB: u64 = 1_000_000;

/// `layers` trunk layers, 3 MoE layers of 10 experts of 10 MB, top-2.
fn footprint(layers: Vec<u64>) -> Footprint {
    Footprint {
        layer_trunk_bytes: layers,
        expert_bytes: 10 * MB,
        n_experts_total: 30,
        top_k: 2,
        moe_layers: 3,
        resident_bytes: 0,
        head_bytes: 100 * MB,
        embed_bytes: 0,
        vocab_rows: 0,
        state_bytes: 0,
        kv_bytes_per_position: 0,
        scratch_bytes: 0,
        layer_pieces: Vec::new(),
    }
}

fn rates(drive_gbps: f64, decode_gbps: f64) -> CostRates {
    CostRates {
        disk: DiskRates::same(drive_gbps * 1e9),
        compute: ComputeRates { bf16_bytes_per_second: 10e9, expert_bytes_per_second: 5e9 },
        decode_bytes_per_second: decode_gbps * 1e9,
    }
}

fn request(trunk: u64, cache: u64) -> PlanRequest {
    PlanRequest {
        budget: Budget { trunk_bytes: trunk, cache_bytes: cache },
        streamed_trunk: true,
        context_length: 16,
        io_threads: 4,
    }
}

/// Stored sizes at 0.67 × raw, rounded up to 4096 like `trunk.bin`'s.
fn coded_sizes(fp: &Footprint) -> Vec<u64> {
    fp.layer_trunk_bytes.iter().map(|&b| (b * 67 / 100).next_multiple_of(4096)).collect()
}

fn count(plan: &MemoryPlan, r: LayerResidency) -> usize {
    plan.residency.iter().filter(|x| **x == r).count()
}

fn assert_within_budget(plan: &MemoryPlan, req: &PlanRequest) {
    let total = req.budget.trunk_bytes + req.budget.cache_bytes;
    assert!(plan.trunk_bytes + plan.cache_bytes <= total, "{plan:?} exceeds {total}");
    let streams = plan.residency.iter().any(|r| *r != LayerResidency::Pinned);
    assert_eq!(plan.ring_slots > 0, streams, "a ring exactly when a layer is not pinned raw: {plan:?}");
}

/// Eight 1 GB layers stored at 0.67 ×, and a 6 GB + 1 GB request.
fn eight_coded_layers() -> (Footprint, Vec<u64>, PlanRequest) {
    let fp = footprint(vec![GB; 8]);
    let stored = coded_sizes(&fp);
    (fp, stored, request(6 * GB, GB))
}

#[test]
fn a_slow_drive_and_a_fast_decoder_hold_layers_coded_in_ram() {
    let (fp, stored, req) = eight_coded_layers();
    let coded = CodedLayers { stored_bytes: &stored, staging_bytes: 128 << 20 };
    let chosen = plan_by_cost(&fp, &req, &rates(1.0, 6.0), Some(coded)).unwrap();
    assert_within_budget(&chosen.plan, &req);
    assert!(count(&chosen.plan, LayerResidency::PinnedCoded) > 0, "{:?}", chosen.plan.residency);
    // The prefix plan of the same budgets, on the same model, is slower.
    let prefix = plan(&fp, &req).unwrap();
    let prefix_cost = cost_of(&fp, &prefix, &rates(1.0, 6.0), Some(coded), true).unwrap();
    assert!(
        chosen.figures.seconds_per_token < prefix_cost.seconds_per_token,
        "{:?} vs prefix {:?}",
        chosen.figures,
        prefix_cost
    );
    // Its figures are the model's figures of the plan it returns.
    assert_eq!(cost_of(&fp, &chosen.plan, &rates(1.0, 6.0), Some(coded), true).unwrap(), chosen.figures);
}

#[test]
fn a_decoder_slower_than_the_drive_pins_raw_rather_than_holding_coded() {
    // On a coded trunk every layer not pinned raw is decoded each pass (held coded or
    // streamed), so a slow decoder makes raw pinning worth its larger bytes.
    let (fp, stored, req) = eight_coded_layers();
    let coded = CodedLayers { stored_bytes: &stored, staging_bytes: 128 << 20 };
    let fast = plan_by_cost(&fp, &req, &rates(1.0, 6.0), Some(coded)).unwrap().plan;
    let slow = plan_by_cost(&fp, &req, &rates(7.0, 0.5), Some(coded)).unwrap().plan;
    assert!(count(&slow, LayerResidency::Pinned) > count(&fast, LayerResidency::Pinned), "{slow:?} vs {fast:?}");
    assert!(count(&slow, LayerResidency::PinnedCoded) < count(&fast, LayerResidency::PinnedCoded));
    assert_within_budget(&slow, &req);
}

#[test]
fn a_raw_trunk_is_never_held_coded() {
    let fp = footprint(vec![GB; 8]);
    let req = request(6 * GB, GB);
    let chosen = plan_by_cost(&fp, &req, &rates(1.0, 6.0), None).unwrap();
    assert_eq!(count(&chosen.plan, LayerResidency::PinnedCoded), 0);
    assert_eq!(chosen.plan.staging_bytes, 0);
    assert_within_budget(&chosen.plan, &req);
}

#[test]
fn the_released_model_pins_its_largest_layer_to_shrink_the_ring() {
    // Layer 0 is 2.34 GB, the others 1.27 and 0.84: a ring sized for layer 0 wastes 2 × 1.07 GB.
    let fp = released_footprint();
    let req = request(20 * GB, 3 * GB);
    let chosen = plan_by_cost(&fp, &req, &rates(2.0, 6.0), None).unwrap();
    assert_eq!(chosen.plan.residency[0], LayerResidency::Pinned, "{:?}", chosen.plan.residency);
    assert!(chosen.plan.ring_slot_bytes < 1_300_000_000, "{}", chosen.plan.ring_slot_bytes);
    assert_within_budget(&chosen.plan, &req);
    let prefix = plan(&fp, &req).unwrap();
    let prefix_cost = cost_of(&fp, &prefix, &rates(2.0, 6.0), None, true).unwrap();
    assert!(chosen.figures.seconds_per_token < prefix_cost.seconds_per_token);
}

#[test]
fn the_split_moves_to_the_cache_where_experts_dominate() {
    // Tiny trunk, huge experts: every byte moved from the trunk to the cache buys hits.
    let mut fp = footprint(vec![10 * MB; 4]);
    fp.expert_bytes = 500 * MB;
    let req = request(4 * GB, 2 * GB);
    let chosen = plan_by_cost(&fp, &req, &rates(1.0, 6.0), None).unwrap();
    assert!(chosen.plan.cache_bytes > 2 * GB, "cache {}", chosen.plan.cache_bytes);
    assert_within_budget(&chosen.plan, &req);
}

#[test]
fn without_a_packed_trunk_everything_is_pinned() {
    let fp = footprint(vec![GB; 4]);
    let req = PlanRequest { streamed_trunk: false, ..request(5 * GB, GB) };
    let chosen = plan_by_cost(&fp, &req, &rates(1.0, 6.0), None).unwrap();
    assert_eq!(chosen.plan, plan(&fp, &req).unwrap());
}

#[test]
fn a_rate_that_is_not_positive_is_refused_by_name() {
    let fp = footprint(vec![GB; 4]);
    let mut r = rates(1.0, 6.0);
    r.disk.trunk_bytes_per_second = 0.0;
    let e = plan_by_cost(&fp, &request(3 * GB, GB), &r, None).unwrap_err();
    assert!(e.to_string().contains("trunk read rate"), "{e}");
}

/// Every residency of `n` layers (3^n of them).
fn all_residencies(n: usize) -> Vec<Vec<LayerResidency>> {
    let options = [LayerResidency::Pinned, LayerResidency::PinnedCoded, LayerResidency::Streamed];
    (0..3usize.pow(n as u32))
        .map(|mut k| {
            (0..n)
                .map(|_| {
                    let r = options[k % 3];
                    k /= 3;
                    r
                })
                .collect()
        })
        .collect()
}

/// The trunk bytes and seconds of one residency with `slots` ring slots, or `None` when it
/// breaks a rule (a layer held coded that the trunk stores raw).
fn exhaustive_cost(
    fp: &Footprint,
    stored: &[u64],
    residency: &[LayerResidency],
    slots: usize,
) -> Option<(u64, MemoryPlan)> {
    let raw = &fp.layer_trunk_bytes;
    let mut bytes = 0;
    let mut largest = 0;
    let mut streams_coded = false;
    for (l, x) in residency.iter().enumerate() {
        match x {
            LayerResidency::Pinned => bytes += raw[l],
            LayerResidency::PinnedCoded if stored[l] < raw[l] => {
                bytes += stored[l];
                largest = largest.max(raw[l]);
            }
            LayerResidency::PinnedCoded => return None,
            LayerResidency::Streamed => {
                largest = largest.max(raw[l]);
                streams_coded |= stored[l] < raw[l];
            }
        }
    }
    let needs_ring = residency.iter().any(|x| *x != LayerResidency::Pinned);
    if needs_ring == (slots == 0) {
        return None;
    }
    let ring = if needs_ring { slots as u64 * (largest.next_multiple_of(4096) + 4096) } else { 0 };
    let staging = if streams_coded { 128 << 20 } else { 0 };
    let trunk = bytes + ring + staging;
    let mut p = plan(fp, &request(u64::MAX / 4, 0)).ok()?;
    p.residency = residency.to_vec();
    p.ring_slots = if needs_ring { slots } else { 0 };
    Some((trunk, p))
}

#[test]
fn the_knapsack_is_within_one_step_per_layer_of_an_exhaustive_search() {
    // Mixed sizes like K3's (one large layer, two kinds interleaved), some stored raw.
    // No routed experts, so every candidate's seconds are its trunk's.
    let fp = Footprint {
        n_experts_total: 0,
        moe_layers: 0,
        ..footprint(vec![2300 * MB, 1270 * MB, 840 * MB, 1270 * MB, 840 * MB, 1270 * MB])
    };
    let mut stored = coded_sizes(&fp);
    stored[4] = fp.layer_trunk_bytes[4]; // a layer the codec did not shrink
    let coded = CodedLayers { stored_bytes: &stored, staging_bytes: 128 << 20 };
    let candidates = all_residencies(fp.layer_trunk_bytes.len());
    for (drive, decode) in [(1.0, 6.0), (3.0, 3.0), (7.0, 1.0)] {
        let r = rates(drive, decode);
        for trunk_gb in [3.0, 4.5, 6.0, 8.0, 10.0] {
            let budget = (trunk_gb * GB as f64) as u64;
            let req = request(budget, 0);
            let Ok(chosen) = plan_by_cost(&fp, &req, &r, Some(coded)) else {
                panic!("no plan at {trunk_gb} GB");
            };
            assert_within_budget(&chosen.plan, &req);
            let step = budget.div_ceil(k3_plan::cost_plan::GRANULES);
            let slack = step * fp.layer_trunk_bytes.len() as u64;
            let trunk_seconds = |p: &MemoryPlan| cost_of(&fp, p, &r, Some(coded), true).map(|f| f.seconds_per_token);
            // The best exhaustive residency within the trunk budget less the slack, and
            // the best within the whole budget: the knapsack lands between them.
            let (mut tight, mut loose) = (f64::INFINITY, f64::INFINITY);
            for residency in &candidates {
                for slots in [0, 1, 2] {
                    let Some((bytes, p)) = exhaustive_cost(&fp, &stored, residency, slots) else { continue };
                    let s = trunk_seconds(&p).unwrap();
                    if bytes <= budget {
                        loose = loose.min(s);
                    }
                    if bytes + slack <= budget {
                        tight = tight.min(s);
                    }
                }
            }
            let got = chosen.figures.seconds_per_token;
            assert!(got <= tight + 1e-9, "{drive}/{decode} GB/s, {trunk_gb} GB: {got} > exhaustive {tight}");
            assert!(got >= loose - 1e-9, "{drive}/{decode} GB/s, {trunk_gb} GB: {got} beats every plan that fits");
        }
    }
}

#[test]
fn a_prefix_plan_counts_the_staging_buffers_while_a_coded_layer_streams() {
    let fp = footprint(vec![GB; 8]);
    let stored = coded_sizes(&fp);
    let coded = CodedLayers { stored_bytes: &stored, staging_bytes: 128 << 20 };
    let machine = MachineMemory::new(64 * GB, 64 * GB);
    let request = |trunk_bytes| MemoryRequest {
        choice: BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes: GB }),
        streamed_trunk: true,
        context_length: 16,
        io_threads: 4,
    };
    let with = |trunk, coding| plan_memory_by(&fp, &request(trunk), machine, false, (ResidencyRule::Prefix, coding));
    let coded_plan = with(3 * GB, Some(coded)).unwrap();
    assert_eq!(coded_plan.staging_bytes, 128 << 20);
    assert!(coded_plan.trunk_bytes <= 3 * GB, "{coded_plan:?}");
    let raw_plan = with(3 * GB, None).unwrap();
    assert_eq!(raw_plan.staging_bytes, 0);
    assert_eq!(
        raw_plan.trunk_bytes - raw_plan.pinned_bytes,
        coded_plan.trunk_bytes - coded_plan.pinned_bytes - (128 << 20)
    );
    // Everything pinned: nothing streams, so no staging.
    assert_eq!(with(9 * GB, Some(coded)).unwrap().staging_bytes, 0);
    // Two slots and the staging do not fit: one slot and the staging do.
    let slot = GB.next_multiple_of(4096) + 4096;
    let one_slot = with(2 * slot + (64 << 20), Some(coded)).unwrap();
    assert_eq!((one_slot.ring_slots, one_slot.staging_bytes), (1, 128 << 20));
    // One slot but not the staging beside it: refused, with the minimum that counts both.
    match with(slot + (64 << 20), Some(coded)) {
        Err(k3_plan::PlanError::TrunkBudgetTooSmall { minimum_bytes, .. }) => {
            assert_eq!(minimum_bytes, slot + (128 << 20))
        }
        other => panic!("{other:?}"),
    }
}
