//! The forecast's arithmetic: bytes per token, hit rates, I/O and compute seconds, range.

use k3_plan::forecast::{hit_rate_ceiling, lru_uniform_hit_rate, trunk_bytes_per_token};
use k3_plan::{
    forecast, plan, released_footprint, ComputeRates, DiskRates, Footprint, ForecastError, ForecastInput,
    LayerResidency, MemoryPlan, PlanRequest, Preset, GB,
};

/// Four layers of 1 GB trunk, 3 MoE layers of 10 experts of 10 MB, top-2.
fn small() -> Footprint {
    Footprint {
        layer_trunk_bytes: vec![GB; 4],
        expert_bytes: 10_000_000,
        n_experts_total: 30,
        top_k: 2,
        moe_layers: 3,
        resident_bytes: 0,
        head_bytes: GB / 2,
        embed_bytes: 0,
        vocab_rows: 0,
        state_bytes: 0,
        kv_bytes_per_position: 0,
        scratch_bytes: 0,
        layer_pieces: Vec::new(),
    }
}

fn with_plan(pinned_layers: usize, cache_slots: u64) -> MemoryPlan {
    MemoryPlan {
        residency: LayerResidency::prefix(4, pinned_layers),
        pinned_layers,
        pinned_bytes: 0,
        pinned_coded_bytes: 0,
        staging_bytes: 0,
        ring_slots: 1,
        ring_slot_bytes: 0,
        piece_eager_bytes: 0,
        trunk_bytes: 0,
        cache_slots,
        cache_slot_bytes: 0,
        cache_bytes: 0,
        io_buffer_bytes: 0,
        vocab: k3_plan::VocabPlacement::Held,
        vocab_bytes: 0,
        prefill_chunk: 64,
        scratch_bytes: 0,
        fixed_bytes: 0,
        total_bytes: 0,
    }
}

/// A streamed-trunk forecast input at the test rates, no codec.
fn streamed_input<'a>(fp: &'a Footprint, plan: &'a MemoryPlan, disk: DiskRates) -> ForecastInput<'a> {
    ForecastInput { footprint: fp, plan, trunk_streamed: true, disk, rates: RATES, coding: None }
}

const RATES: ComputeRates = ComputeRates { bf16_bytes_per_second: 5e9, expert_bytes_per_second: 2e9 };

#[test]
fn hit_rates_follow_the_stated_models() {
    let fp = small(); // W = 6 requests per token, E = 10 per layer.
    assert_eq!(lru_uniform_hit_rate(5, &fp), 0.0, "below one token's requests LRU keeps nothing");
    assert!((lru_uniform_hit_rate(6, &fp) - 0.2).abs() < 1e-12, "one token kept: k/E");
    assert!((lru_uniform_hit_rate(13, &fp) - (1.0 - 0.8f64.powi(2))).abs() < 1e-12);
    assert_eq!(lru_uniform_hit_rate(30, &fp), 1.0, "every expert fits");
    assert_eq!(hit_rate_ceiling(3, &fp), 0.5);
    assert_eq!(hit_rate_ceiling(60, &fp), 1.0);
}

#[test]
fn the_released_model_reuses_nothing_below_one_tokens_requests() {
    let fp = released_footprint();
    assert_eq!(lru_uniform_hit_rate(1471, &fp), 0.0);
    assert!((lru_uniform_hit_rate(1472, &fp) - 16.0 / 896.0).abs() < 1e-12);
    assert!((hit_rate_ceiling(56, &fp) - 56.0 / 1472.0).abs() < 1e-12);
}

#[test]
fn bytes_and_seconds_add_up() {
    let fp = small();
    let p = with_plan(1, 6);
    let input = streamed_input(&fp, &p, DiskRates::same(1e9));
    let f = forecast(&input).unwrap();
    assert_eq!(f.trunk_bytes, 3 * GB, "layers 1..4 stream");
    assert_eq!(f.expert_requests, 6);
    assert_eq!(f.expert_bytes.floor, 60e6);
    assert!((f.expert_bytes.uniform - 48e6).abs() < 1e-3, "{}", f.expert_bytes.uniform);
    assert_eq!(f.expert_bytes.ceiling, 0.0, "6 slots can serve all 6 requests");
    assert!((f.io_seconds.floor - 3.06).abs() < 1e-9);
    assert!((f.io_seconds.uniform - 3.048).abs() < 1e-9);
    assert_eq!(f.io_seconds.ceiling, 3.0);
    // Compute: 4 GB trunk + 0.5 GB head at 5 GB/s, 6 × 10 MB experts at 2 GB/s.
    assert_eq!((f.compute_bf16_bytes, f.compute_expert_bytes), (4_500_000_000, 60_000_000));
    assert!((f.compute_seconds - 0.93).abs() < 1e-9);
    let s = f.seconds_per_token;
    assert_eq!(s.low, 3.0);
    assert!((s.high - 3.99).abs() < 1e-9);
    assert!((s.expected_overlapped - 3.048).abs() < 1e-9);
    assert!((s.expected_serial - 3.978).abs() < 1e-9);
}

#[test]
fn a_resident_trunk_reads_no_trunk_bytes() {
    let fp = small();
    assert_eq!(trunk_bytes_per_token(&fp, &with_plan(0, 6), false), 0);
    assert_eq!(trunk_bytes_per_token(&fp, &with_plan(4, 6), true), 0);
    assert_eq!(trunk_bytes_per_token(&fp, &with_plan(0, 6), true), 4 * GB);
}

#[test]
fn compute_bound_plans_take_compute_as_the_low_end() {
    let fp = small();
    let p = with_plan(4, 30);
    let input = streamed_input(&fp, &p, DiskRates::same(1e9));
    let f = forecast(&input).unwrap();
    assert_eq!(f.io_seconds.ceiling, 0.0);
    assert_eq!(f.hit_rate.floor, 1.0, "every expert has a slot: no misses once warm");
    assert_eq!(f.seconds_per_token.low, f.compute_seconds);
    assert_eq!(f.seconds_per_token.high, f.compute_seconds);
}

#[test]
fn released_laptop_reads_the_whole_trunk_and_every_expert() {
    let fp = released_footprint();
    let budget = Preset::Laptop.fixed_budget().unwrap();
    let p = plan(&fp, &PlanRequest { budget, streamed_trunk: true, context_length: 4096, io_threads: 4 }).unwrap();
    let input = streamed_input(&fp, &p, DiskRates::same(4.6e9));
    let f = forecast(&input).unwrap();
    // PRODUCT §3: ~135 GB at `laptop` (108.8 GB trunk + 25.8 GB of experts), and the
    // output head (163,840 × 7,168 BF16), read every token when the trunk streams.
    assert_eq!(p.vocab, k3_plan::VocabPlacement::Read);
    assert_eq!(f.trunk_bytes, 108_811_877_376 + 2_348_810_240);
    assert_eq!(f.expert_bytes.uniform, 1472.0 * 17_547_264.0);
    assert!((f.io_seconds.uniform - 136.99e9 / 4.6e9).abs() < 0.01, "{}", f.io_seconds.uniform);
}

#[test]
fn rates_that_are_not_positive_are_refused() {
    let fp = small();
    let p = with_plan(0, 6);
    let bad = streamed_input(&fp, &p, DiskRates::same(0.0));
    let err = forecast(&bad).unwrap_err();
    assert_eq!(err, ForecastError::NotPositive { what: "the disk bandwidth for trunk reads", value: 0.0 });
    assert_eq!(err.to_string(), "the disk bandwidth for trunk reads must be a positive number (got 0)");
    let nan = ComputeRates { bf16_bytes_per_second: f64::NAN, ..RATES };
    assert!(forecast(&ForecastInput { rates: nan, disk: DiskRates::same(1e9), ..bad }).is_err());
    let no_mix = DiskRates { trunk_bytes_per_second: 1e9, expert_bytes_per_second: -1.0 };
    assert!(forecast(&ForecastInput { disk: no_mix, ..bad }).is_err());
}

#[test]
fn trunk_and_expert_reads_each_take_their_own_rate() {
    let fp = small();
    let disk = DiskRates { trunk_bytes_per_second: 2e9, expert_bytes_per_second: 1e9 };
    let streamed = with_plan(1, 6);
    let input = streamed_input(&fp, &streamed, disk);
    let f = forecast(&input).unwrap();
    assert!((f.io_seconds.floor - (1.5 + 0.06)).abs() < 1e-9, "3 GB at 2 GB/s + 60 MB at 1 GB/s");
    assert_eq!(f.io_seconds.ceiling, 1.5, "no expert reads at the ceiling");
}

#[test]
fn a_coded_trunk_reads_its_coded_bytes_and_pays_its_decode_in_compute() {
    let fp = small();
    let p = with_plan(1, 6);
    // Layer 3 stayed raw (the codec did not shrink it); layers 0..3 are coded to 0.67 GB.
    let read = [670_000_000, 670_000_000, 670_000_000, GB];
    let raw_input = streamed_input(&fp, &p, DiskRates::same(1e9));
    let raw = forecast(&raw_input).unwrap();
    let fast = k3_plan::TrunkCoding { layer_read_bytes: &read, decode_bytes_per_second: 6e9 };
    let coded = forecast(&ForecastInput { coding: Some(fast), ..raw_input }).unwrap();
    assert_eq!(coded.trunk_bytes, 2 * 670_000_000 + GB, "layer 0 is pinned: layers 1, 2 coded, 3 raw");
    assert!((coded.decode_seconds - 2.0 * GB as f64 / 6e9).abs() < 1e-9, "only the coded streamed layers decode");
    assert!((coded.compute_seconds - raw.compute_seconds - coded.decode_seconds).abs() < 1e-9);
    assert!(coded.seconds_per_token.expected_overlapped < raw.seconds_per_token.expected_overlapped);
    // A decoder slower than the drive makes the coded trunk the slower one.
    let slow = k3_plan::TrunkCoding { layer_read_bytes: &read, decode_bytes_per_second: 0.2e9 };
    let slow = forecast(&ForecastInput { coding: Some(slow), ..raw_input }).unwrap();
    assert!(slow.seconds_per_token.expected_overlapped > raw.seconds_per_token.expected_overlapped);
    let broken = k3_plan::TrunkCoding { layer_read_bytes: &read, decode_bytes_per_second: 0.0 };
    assert!(forecast(&ForecastInput { coding: Some(broken), ..raw_input }).is_err());
}
