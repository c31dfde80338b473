//! The memory plan on the real K3 footprint (spec §6.5, §11) and on small edge cases.

use k3_plan::{
    auto_budget, auto_budget_for, fixed_bytes, fixed_bytes_with, parse_size, plan, plan_memory, released_footprint,
    Budget, BudgetChoice, CgroupMemory, Footprint, MachineMemory, MemoryRequest, PlanError, PlanRequest, Preset,
    VocabPlacement, GB,
};

/// The released K3 footprint, derived from the spec's tensor catalogue.
fn k3() -> Footprint {
    released_footprint()
}

fn request(preset: Preset) -> PlanRequest {
    PlanRequest { budget: preset.fixed_budget().unwrap(), streamed_trunk: true, context_length: 4096, io_threads: 4 }
}

#[test]
fn k3_trunk_sums_to_the_published_108_81_gb() {
    assert_eq!(k3().trunk_total_bytes(), 108_811_877_376);
}

#[test]
fn laptop_streams_everything_through_one_slot_sized_for_layer_0() {
    let p = plan(&k3(), &request(Preset::Laptop)).unwrap();
    assert_eq!((p.pinned_layers, p.ring_slots), (0, 1));
    assert!(p.ring_slot_bytes >= 2_341_213_184 && p.ring_slot_bytes < 2_342_000_000);
    assert_eq!(p.cache_slots, 56, "published: 56 expert slots");
    assert!(p.trunk_bytes <= 3 * GB && p.cache_bytes <= GB);
}

#[test]
fn larger_presets_pin_more_and_stay_within_budget() {
    let mut last_pinned = 0;
    for preset in [Preset::Laptop, Preset::Desktop, Preset::Workstation, Preset::Server, Preset::Max] {
        let req = request(preset);
        let p = plan(&k3(), &req).unwrap();
        assert!(p.trunk_bytes <= req.budget.trunk_bytes, "{preset:?}");
        assert!(p.cache_bytes <= req.budget.cache_bytes, "{preset:?}");
        assert!(p.pinned_layers >= last_pinned, "{preset:?}");
        assert_eq!(p.total_bytes, p.trunk_bytes + p.cache_bytes + p.io_buffer_bytes + p.fixed_bytes);
        last_pinned = p.pinned_layers;
        eprintln!(
            "{}: pinned {}/93, ring {} × {} B, cache {} slots",
            preset.name(),
            p.pinned_layers,
            p.ring_slots,
            p.ring_slot_bytes,
            p.cache_slots
        );
    }
    let server = plan(&k3(), &request(Preset::Server)).unwrap();
    assert!(server.pinned_layers >= 88, "server pins most layers: {}", server.pinned_layers);
    // A 60 GB trunk budget pins 48 layers in the published logs; so do we (with two slots).
    let p60 = plan(
        &k3(),
        &PlanRequest { budget: Budget { trunk_bytes: 60 * GB, cache_bytes: GB }, ..request(Preset::Laptop) },
    )
    .unwrap();
    assert!(p60.pinned_layers >= 48, "{}", p60.pinned_layers);
}

#[test]
fn too_small_budgets_are_refused_with_the_minimum() {
    // The floor is one slot for the largest piece (layer 0's dense FFN matrices, 484 MB)
    // and that layer's small tensors, no longer layer 0 whole (2.34 GB).
    let small = PlanRequest { budget: Budget { trunk_bytes: 400_000_000, cache_bytes: GB }, ..request(Preset::Laptop) };
    match plan(&k3(), &small) {
        Err(PlanError::TrunkBudgetTooSmall { minimum_bytes, .. }) => {
            assert!((484_442_112..500_000_000).contains(&minimum_bytes), "{minimum_bytes}")
        }
        other => panic!("{other:?}"),
    }
    let no_cache =
        PlanRequest { budget: Budget { trunk_bytes: 3 * GB, cache_bytes: 200_000_000 }, ..request(Preset::Laptop) };
    match plan(&k3(), &no_cache) {
        Err(PlanError::CacheBudgetTooSmall { minimum_slots, .. }) => assert_eq!(minimum_slots, 17),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_packed_trunk_everything_is_resident_and_must_fit_the_trunk_budget() {
    // issue 13: the trunk budget was ignored without a packed trunk (a 3 GB budget "fit"
    // a 108 GB resident trunk).
    let laptop = PlanRequest { streamed_trunk: false, ..request(Preset::Laptop) };
    match plan(&k3(), &laptop) {
        Err(e @ PlanError::TrunkNotPacked { budget_bytes: 3_000_000_000, trunk_bytes: 108_811_877_376 }) => {
            assert!(e.to_string().contains("k3 pack"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let whole = Budget { trunk_bytes: 110 * GB, cache_bytes: GB };
    let p = plan(&k3(), &PlanRequest { budget: whole, ..laptop }).unwrap();
    assert_eq!((p.pinned_layers, p.ring_slots), (93, 0));
    assert_eq!(p.trunk_bytes, 108_811_877_376);
}

#[test]
fn auto_takes_the_whole_trunk_when_it_fits_and_refuses_tiny_machines() {
    let fp = k3();
    let fixed = fp.resident_bytes + fp.state_bytes;
    let big = MachineMemory::new(256 * GB, 250 * GB);
    let b = auto_budget(big, fixed, fp.trunk_total_bytes(), GB / 2, 3 * GB).unwrap();
    assert_eq!(b.trunk_bytes, fp.trunk_total_bytes());
    assert!(b.cache_bytes > 100 * GB);
    let small = MachineMemory::new(32 * GB, 28 * GB);
    let b = auto_budget(small, fixed, fp.trunk_total_bytes(), GB / 2, 3 * GB).unwrap();
    assert_eq!(b.cache_bytes, GB / 2);
    assert!(b.trunk_bytes >= 3 * GB && b.trunk_bytes < 28 * GB);
    let tiny = MachineMemory::new(8 * GB, 6 * GB);
    assert!(auto_budget(tiny, fixed, fp.trunk_total_bytes(), GB / 2, 3 * GB).is_err());
}

#[test]
fn sizes_parse_with_decimal_and_binary_units() {
    assert_eq!(parse_size("512MB"), Ok(512_000_000));
    assert_eq!(
        parse_size("3XB").unwrap_err().to_string(),
        "`3XB` has an unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB) (try 512MB, 3GB, 1.5GiB)"
    );
    assert_eq!(parse_size("3GB"), Ok(3_000_000_000));
    assert_eq!(parse_size("1.5GiB"), Ok(1_610_612_736));
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size(" 2 KiB "), Ok(2048));
    assert_eq!(parse_size("2 kB"), Ok(2000), "the prefix's case does not matter");
    for bad in ["", "GB", "3XB", "-1GB", "1e9", "99999999999999TB"] {
        assert!(parse_size(bad).is_err(), "{bad:?}");
    }
    // Probe finding: `3Gb` (gigabits) was read as gigabytes. A lowercase `b` is refused.
    for bits in ["3Gb", "3gb", "2 kib", "300b"] {
        assert!(parse_size(bits).unwrap_err().to_string().contains("bits"), "{bits:?}");
    }
}

#[test]
fn presets_round_trip_their_names() {
    for p in Preset::ALL {
        assert_eq!(Preset::parse(p.name()), Some(p));
    }
    assert_eq!(Preset::parse("tiny"), None);
}

#[test]
fn a_cgroup_limit_caps_what_auto_sees() {
    let fp = k3();
    let host = MachineMemory::new(256 * GB, 250 * GB);
    let boxed = MachineMemory { cgroup: Some(CgroupMemory { limit_bytes: 32 * GB, usage_bytes: 4 * GB }), ..host };
    assert_eq!(boxed.usable_total_bytes(), 32 * GB);
    assert_eq!(boxed.usable_available_bytes(), 28 * GB);
    let free = auto_budget_for(&fp, host, 4096).unwrap();
    let capped = auto_budget_for(&fp, boxed, 4096).unwrap();
    assert_eq!(free.trunk_bytes, fp.trunk_total_bytes());
    assert!(capped.trunk_bytes + capped.cache_bytes < 28 * GB, "{capped:?}");
}

#[test]
fn the_plan_reserves_kv_for_the_stated_context_length() {
    let short = plan(&k3(), &PlanRequest { context_length: 4096, ..request(Preset::Laptop) }).unwrap();
    let long = plan(&k3(), &PlanRequest { context_length: 32_768, ..request(Preset::Laptop) }).unwrap();
    assert_eq!(long.fixed_bytes - short.fixed_bytes, (32_768 - 4096) * 55_296);
    assert_eq!(fixed_bytes_with(&k3(), 32_768, VocabPlacement::Read), long.fixed_bytes);
    assert_eq!(fixed_bytes(&k3(), 32_768) - long.fixed_bytes, 4_697_620_480 - long.vocab_bytes, "held vs read");
}

#[test]
fn laptop_fits_8_gb_with_a_16k_context_reading_the_embeddings_and_head_when_used() {
    let p = plan(&k3(), &PlanRequest { context_length: 16_384, ..request(Preset::Laptop) }).unwrap();
    assert_eq!(p.vocab, VocabPlacement::Read);
    // 256 embedding rows + one row's window + two 32 MiB head chunks (2,340 rows each).
    assert_eq!(p.vocab_bytes, 256 * 14_336 + 20_480 + 2 * (2_340 * 14_336 + 4_096));
    assert!(p.total_bytes <= 8 * GB, "laptop at 16 K: {} bytes", p.total_bytes);
}

#[test]
fn ultra_fits_2_gb_with_a_4k_context_streaming_layers_in_pieces() {
    let p = plan(&k3(), &PlanRequest { context_length: 4096, ..request(Preset::Ultra) }).unwrap();
    eprintln!("ultra at 4,096 on released K3: {p:#?}");
    assert_eq!((p.pinned_layers, p.ring_slots), (0, 1));
    // One slot holds the largest matrix (layer 0's dense FFN, 33,792 × 7,168 bf16), not layer 0.
    assert_eq!(p.ring_slot_bytes, k3_plan::ring_slot_bytes_for(33_792 * 7_168 * 2));
    assert!(p.piece_eager_bytes > 0 && p.piece_eager_bytes < 10_000_000, "{}", p.piece_eager_bytes);
    assert_eq!(p.cache_slots, 17, "top-k + 1");
    assert_eq!(p.vocab, VocabPlacement::Read);
    assert!(p.total_bytes <= 2 * GB, "ultra at 4 K: {} bytes", p.total_bytes);
}

#[test]
fn plan_memory_refuses_a_plan_beyond_available_memory_with_the_numbers() {
    let req =
        MemoryRequest { choice: Preset::Laptop.choice(), streamed_trunk: true, context_length: 4096, io_threads: 4 };
    let small = MachineMemory::new(16 * GB, 4 * GB);
    let err = plan_memory(&k3(), &req, small, true).unwrap_err();
    let PlanError::ExceedsAvailable { needed_bytes, available_bytes } = err else { panic!("{err:?}") };
    assert_eq!(available_bytes, 4 * GB);
    assert!(needed_bytes > available_bytes);
    let text = err.to_string();
    assert!(text.contains("4.00 GB available") && text.contains("short"), "{text}");
    assert!(plan_memory(&k3(), &req, small, false).is_ok());
}

#[test]
fn budget_choices_come_from_preset_names_or_sizes() {
    assert_eq!(BudgetChoice::from_flags(None, None, None), Ok(None));
    assert_eq!(BudgetChoice::from_flags(Some("auto"), None, None), Ok(Some(BudgetChoice::Auto)));
    assert_eq!(
        BudgetChoice::from_flags(Some("laptop"), None, None),
        Ok(Some(BudgetChoice::Fixed(Budget { trunk_bytes: 3 * GB, cache_bytes: GB })))
    );
    assert_eq!(
        BudgetChoice::from_flags(None, None, Some("40KB")),
        Ok(Some(BudgetChoice::Fixed(Budget { trunk_bytes: u64::MAX, cache_bytes: 40_000 })))
    );
    let unknown = BudgetChoice::from_flags(Some("tiny"), None, None).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "unknown preset `tiny` (use ultra, laptop, desktop, workstation, server, max, auto)"
    );
}

#[test]
fn plan_errors_print_their_numbers() {
    let e = PlanError::CacheBudgetTooSmall {
        budget_bytes: 200_000_000,
        minimum_bytes: 298_401_792,
        slot_bytes: 17_553_048,
        minimum_slots: 17,
    };
    assert_eq!(
        e.to_string(),
        "cache budget 200.00 MB holds fewer than 17 expert slots of 17553048 bytes; at least 298.40 MB is needed"
    );
}

/// Found by the `plan_numbers` fuzz target (corpus seed `finding-auto-min-cache-overflow`):
/// `auto` multiplied top-k + 1 by the slot size unchecked (a panic in debug, a wrapped,
/// too small minimum cache in release). Footprints past 64 bits are refused with the
/// numbers, and no plan figure wraps.
#[test]
fn fuzz_finding_footprints_past_64_bits_are_refused_never_wrapped() {
    let huge = 12_213_762_189_428_804_530;
    let fp = Footprint {
        layer_trunk_bytes: vec![huge, 19_378, huge],
        expert_bytes: huge,
        n_experts_total: huge,
        top_k: huge,
        moe_layers: huge,
        resident_bytes: huge,
        head_bytes: huge,
        embed_bytes: 0,
        vocab_rows: 0,
        state_bytes: huge,
        kv_bytes_per_position: huge,
        scratch_bytes: huge,
        layer_pieces: Vec::new(),
    };
    let machine = MachineMemory::new(256 * GB, 200 * GB);
    let auto = MemoryRequest { choice: BudgetChoice::Auto, streamed_trunk: true, context_length: 4096, io_threads: 4 };
    assert!(matches!(auto_budget_for(&fp, machine, 4096), Err(PlanError::AutoTooSmall { .. })));
    assert!(matches!(plan_memory(&fp, &auto, machine, true), Err(PlanError::AutoTooSmall { .. })));
    // Unlimited budgets (what one missing --*-budget flag means): the sums pass 64 bits.
    let unlimited = Budget { trunk_bytes: u64::MAX, cache_bytes: u64::MAX };
    let resident = PlanRequest { budget: unlimited, streamed_trunk: false, context_length: 4096, io_threads: 4 };
    match plan(&fp, &resident) {
        Err(e @ PlanError::Overflow { .. }) => assert!(e.to_string().contains("64 bits"), "{e}"),
        other => panic!("expected an overflow refusal, got {other:?}"),
    }
    // Streamed, the trunk fits (layer 0 streams through one slot); top-k + 1 slots do not.
    let streamed = PlanRequest { streamed_trunk: true, ..resident };
    assert!(matches!(plan(&fp, &streamed), Err(PlanError::CacheBudgetTooSmall { .. })), "{:?}", plan(&fp, &streamed));
    // A layer whose ring slot (rounded up to 4096, plus a page) passes 64 bits fits no budget.
    let wide_layer = Footprint { layer_trunk_bytes: vec![u64::MAX - 10, 20], ..released_footprint() };
    let req = PlanRequest { budget: unlimited, streamed_trunk: true, context_length: 4096, io_threads: 4 };
    assert!(
        matches!(plan(&wide_layer, &req), Err(PlanError::TrunkBudgetTooSmall { .. })),
        "{:?}",
        plan(&wide_layer, &req)
    );
}

#[test]
fn each_kept_conversation_adds_its_recurrent_state_and_kv_cache_to_the_plan() {
    let fp = k3();
    let one = plan(&fp, &request(Preset::Laptop)).unwrap();
    let three = plan(&fp.for_sequences(3), &request(Preset::Laptop)).unwrap();
    let per_sequence = fp.state_bytes + fp.kv_bytes(4096);
    assert_eq!(three.fixed_bytes - one.fixed_bytes, 2 * per_sequence);
    assert_eq!(three.total_bytes - one.total_bytes, 2 * per_sequence);
    assert_eq!(
        (three.trunk_bytes, three.cache_bytes),
        (one.trunk_bytes, one.cache_bytes),
        "weights are not per sequence"
    );
    // Released K3 at 4,096 positions: 55.3 KB of latent cache per position, the KDA states.
    println!("laptop, 1 sequence: {} B; each more: {per_sequence} B", one.total_bytes);
    assert!(per_sequence < GB, "one more kept conversation costs {per_sequence} B");
}
