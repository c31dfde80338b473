//! The memory plan on the real K3 footprint (spec §6.5, §11) and on small edge cases.

use k3_plan::{auto_budget, parse_size, plan, Budget, Footprint, MachineMemory, PlanError, PlanRequest, Preset, GB};

/// K3's per-layer trunk runs: layer 0 (KDA + dense), then KDA+MoE or MLA+MoE by the map.
fn k3() -> Footprint {
    let layers = (0..93u64)
        .map(|l| match l {
            0 => 2_341_213_184,
            l if (l + 1) % 4 == 0 || l == 92 => 844_335_616,
            _ => 1_267_744_256,
        })
        .collect();
    Footprint {
        layer_trunk_bytes: layers,
        expert_bytes: 17_547_264,
        n_experts_total: 92 * 896,
        top_k: 16,
        resident_bytes: 4_697_663_488,
        state_bytes: 626_245_632,
        kv_bytes_per_position: 2_365_440,
        scratch_bytes: 200_000_000,
    }
}

fn request(preset: Preset) -> PlanRequest {
    PlanRequest { budget: preset.fixed_budget().unwrap(), streamed_trunk: true, max_positions: 4096, io_threads: 4 }
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
    let small = PlanRequest { budget: Budget { trunk_bytes: GB, cache_bytes: GB }, ..request(Preset::Laptop) };
    match plan(&k3(), &small) {
        Err(PlanError::TrunkBudgetTooSmall { minimum_bytes, .. }) => assert!(minimum_bytes > 2_341_213_184),
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
fn without_a_packed_trunk_everything_is_resident() {
    let req = PlanRequest { streamed_trunk: false, ..request(Preset::Laptop) };
    let p = plan(&k3(), &req).unwrap();
    assert_eq!((p.pinned_layers, p.ring_slots), (93, 0));
    assert_eq!(p.trunk_bytes, 108_811_877_376);
}

#[test]
fn auto_takes_the_whole_trunk_when_it_fits_and_refuses_tiny_machines() {
    let fp = k3();
    let fixed = fp.resident_bytes + fp.state_bytes;
    let big = MachineMemory { total_bytes: 256 * GB, available_bytes: 250 * GB };
    let b = auto_budget(big, fixed, fp.trunk_total_bytes(), GB / 2, 3 * GB).unwrap();
    assert_eq!(b.trunk_bytes, fp.trunk_total_bytes());
    assert!(b.cache_bytes > 100 * GB);
    let small = MachineMemory { total_bytes: 32 * GB, available_bytes: 28 * GB };
    let b = auto_budget(small, fixed, fp.trunk_total_bytes(), GB / 2, 3 * GB).unwrap();
    assert_eq!(b.cache_bytes, GB / 2);
    assert!(b.trunk_bytes >= 3 * GB && b.trunk_bytes < 28 * GB);
    let tiny = MachineMemory { total_bytes: 8 * GB, available_bytes: 6 * GB };
    assert!(auto_budget(tiny, fixed, fp.trunk_total_bytes(), GB / 2, 3 * GB).is_err());
}

#[test]
fn sizes_parse_with_decimal_and_binary_units() {
    assert_eq!(parse_size("512MB"), Ok(512_000_000));
    assert_eq!(parse_size("3GB"), Ok(3_000_000_000));
    assert_eq!(parse_size("1.5GiB"), Ok(1_610_612_736));
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size(" 2 kib "), Ok(2048));
    for bad in ["", "GB", "3XB", "-1GB", "1e9", "99999999999999TB"] {
        assert!(parse_size(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn presets_round_trip_their_names() {
    for p in Preset::ALL {
        assert_eq!(Preset::parse(p.name()), Some(p));
    }
    assert_eq!(Preset::parse("ultra"), None);
}
