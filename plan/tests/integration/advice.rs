//! The advisor (`k3_plan::advice`): one headroom, one default context per choice, one
//! recommendation, on the released K3 footprint.

use k3_plan::{
    advise, advise_presets, auto_headroom, default_context, headroom_bytes, recommend, released_footprint,
    BudgetChoice, CgroupMemory, MachineMemory, Preset, RunShape, GB, MAX_CONTEXT,
};

const SHAPE: RunShape = RunShape { streamed_trunk: true, io_threads: 4 };

fn machine(total_gb: u64, available_gb: u64) -> MachineMemory {
    MachineMemory::new(total_gb * GB, available_gb * GB)
}

#[test]
fn each_presets_default_context_is_the_largest_that_keeps_auto_headroom_free() {
    let fp = released_footprint();
    for m in [machine(16, 14), machine(64, 48), machine(512, 400)] {
        let reserve = auto_headroom(m) as i64;
        for (preset, advice) in advise_presets(&fp, SHAPE, m, None) {
            let Ok(a) = advice else { continue };
            let Some(d) = a.default_context else {
                assert!(a.headroom_bytes < reserve, "{preset:?}: no default context, yet room at {}", a.context_length);
                continue;
            };
            assert_eq!(a.context_length, d, "{preset:?}: planned at its default context");
            let choice = match preset {
                // `auto` keeps the budgets it has at the base context.
                Preset::Auto => BudgetChoice::Fixed(k3_plan::auto_budget_for(&fp, m, 4096).unwrap()),
                p => p.choice(),
            };
            let at = |c: u64| advise(&fp, choice, SHAPE, m, Some(c)).unwrap().headroom_bytes;
            assert!(at(d) >= reserve, "{preset:?} on {m:?}: {d} positions leave {} < {reserve}", at(d));
            if d < MAX_CONTEXT {
                assert!(at(d + 1) < reserve, "{preset:?} on {m:?}: {} positions would fit too", d + 1);
            }
            eprintln!("{m:?} {preset:?}: default context {d}, total {} B", a.plan.total_bytes);
        }
    }
}

#[test]
fn laptop_on_a_16_gb_machine_defaults_to_more_than_16k_positions() {
    let fp = released_footprint();
    let a = advise(&fp, Preset::Laptop.choice(), SHAPE, machine(16, 14), None).unwrap();
    assert!(a.default_context.unwrap() >= 16_384, "{:?}", a.default_context);
    assert!(a.fits && !a.tight);
    assert!(a.plan.total_bytes <= 14 * GB - auto_headroom(machine(16, 14)));
}

#[test]
fn headroom_is_what_the_cgroup_leaves_not_what_the_host_has() {
    let fp = released_footprint();
    let host = machine(256, 200);
    let boxed = MachineMemory { cgroup: Some(CgroupMemory { limit_bytes: 12 * GB, usage_bytes: GB }), ..host };
    let a = advise(&fp, Preset::Laptop.choice(), SHAPE, boxed, Some(4096)).unwrap();
    assert_eq!(a.headroom_bytes, (11 * GB) as i64 - a.plan.total_bytes as i64);
    assert_eq!(headroom_bytes(boxed, &a.plan), a.headroom_bytes);
    // The default context is limited by the container, not the host.
    let in_box = default_context(&fp, Preset::Laptop.choice(), SHAPE, boxed).unwrap();
    let on_host = default_context(&fp, Preset::Laptop.choice(), SHAPE, host).unwrap();
    assert!(in_box < on_host, "{in_box} vs {on_host}");
}

#[test]
fn a_plan_beyond_the_machine_is_advised_with_its_shortfall() {
    let fp = released_footprint();
    let a = advise(&fp, Preset::Max.choice(), SHAPE, machine(16, 14), Some(4096)).unwrap();
    assert!(!a.fits && a.headroom_bytes < 0 && !a.tight);
    assert_eq!(a.default_context, None, "no context leaves the reserve free");
}

#[test]
fn the_recommendation_is_the_largest_preset_that_fits_with_headroom_else_auto() {
    let fp = released_footprint();
    let on = |m: MachineMemory| recommend(&advise_presets(&fp, SHAPE, m, Some(4096)));
    assert_eq!(on(machine(16, 14)), Some(Preset::Laptop));
    assert_eq!(on(machine(64, 48)), Some(Preset::Desktop));
    assert_eq!(on(machine(4, 3)), None, "not even auto: {:?}", advise_presets(&fp, SHAPE, machine(4, 3), Some(4096)));
}

#[test]
fn a_conversation_is_nearly_full_from_nine_tenths_of_its_context() {
    use k3_plan::nearly_full;
    assert!(!nearly_full(3686, 4096) && nearly_full(3687, 4096), "90 % of 4,096 is 3,686.4");
    assert!(nearly_full(4096, 4096) && !nearly_full(0, 4096) && !nearly_full(5, 0));
    assert!(nearly_full(u64::MAX, u64::MAX), "no overflow");
}
