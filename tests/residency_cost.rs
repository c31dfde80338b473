//! Issue 18 item 4: plans by measured cost hold some layers pinned raw, some coded in RAM
//! (decoded every pass) and stream the rest, and give tokens and logits bit-identical to a
//! resident run at every budget, thread count and replan; a damaged layer held coded fails
//! the generation with a named error. A replan may switch between the prefix rule and the
//! cost rule, and nothing but the placement changes.

use std::path::Path;

use k3_engine::{BudgetChoice, DecodeMode, Engine, EngineOptions, Error, MemoryOptions, ResidencyRule};
use k3_plan::{Budget, ComputeRates, CostRates, DiskRates, LayerResidency};
use k3_tests::{fixture, TINY_CHECKPOINTS};

use crate::gates::{golden, greedy};
use crate::trunk_codec::{generate_once, manifest, pack_coded, staging_of};

/// A slow drive and a fast decoder: holding a layer coded beats streaming it, and pinning
/// it raw beats both, so the budget decides the mix.
fn slow_drive() -> ResidencyRule {
    ResidencyRule::ByCost(CostRates {
        disk: DiskRates::same(50e6),
        compute: ComputeRates { bf16_bytes_per_second: 10e9, expert_bytes_per_second: 5e9 },
        decode_bytes_per_second: 20e9,
    })
}

fn options(trunk: &Path, (trunk_bytes, cache_bytes): (u64, u64)) -> MemoryOptions {
    let mut memory = MemoryOptions::resident();
    memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes }));
    memory.trunk_dir = Some(trunk.to_path_buf());
    memory.io_threads = 2;
    memory.residency = slow_drive();
    memory
}

fn load(name: &str, trunk: &Path, budget: (u64, u64), threads: usize) -> Result<Engine, Error> {
    Engine::load(&EngineOptions { model_dir: fixture(name), threads: Some(threads), memory: options(trunk, budget) })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Trunk budgets from one ring slot (plus staging) to the whole trunk, in eighths.
fn budgets(trunk: &Path) -> Vec<u64> {
    let runs: Vec<u64> =
        manifest(trunk)["layers"].as_array().unwrap().iter().map(|l| l["run_len"].as_u64().unwrap()).collect();
    let slot = k3_plan::align_4096(*runs.iter().max().unwrap()) + 4096;
    let all: u64 = runs.iter().sum();
    let low = slot + staging_of(trunk);
    (0..=8).map(|k| low + (all.saturating_sub(low)) * k / 8).collect()
}

fn cache_of(name: &str, e: &Engine) -> u64 {
    (e.config().moe.top_k as u64 + 1) * crate::streaming::slot_bytes(name)
}

#[test]
fn plans_by_cost_hold_layers_coded_and_change_no_token_or_logit() {
    let mut seen = std::collections::HashSet::new();
    let mut seen_held_only = false;
    for name in TINY_CHECKPOINTS {
        let (model, g) = (fixture(name), golden(name));
        let trunk = pack_coded(&model, &format!("cost-{name}"));
        let resident = crate::gates::engine(name, Some(1));
        let (want_ids, want_logits) = greedy(&resident, &g.prompt, 8, DecodeMode::Incremental);
        let cache = cache_of(name, &resident);
        for budget in budgets(&trunk) {
            for threads in [1, 2] {
                let e = load(name, &trunk, (budget, cache), threads).unwrap();
                let plan = e.plan().unwrap().clone();
                assert!(plan.trunk_bytes + plan.cache_bytes <= budget + cache, "{name}: {plan:?}");
                seen.extend(plan.residency.iter().copied());
                let before = e.metrics();
                let (ids, logits) = greedy(&e, &g.prompt, 8, DecodeMode::Incremental);
                let during = e.metrics().since(&before);
                let what = format!("{name}, {:?}, {threads} threads", plan.residency);
                assert_eq!(ids, want_ids, "{what}");
                assert_eq!(bits(&logits), bits(&want_logits), "{what}: logits");
                let held_coded = plan.residency.contains(&LayerResidency::PinnedCoded);
                if held_coded && !plan.residency.contains(&LayerResidency::Streamed) {
                    // Layers held coded are decoded from RAM every pass, never read.
                    assert_eq!(during.trunk_bytes_read, 0, "{what}: nothing streams");
                    assert!(during.trunk_decode > std::time::Duration::ZERO, "{what}: decoded from RAM");
                    seen_held_only = true;
                }
            }
        }
        std::fs::remove_dir_all(trunk).ok();
    }
    for r in [LayerResidency::Pinned, LayerResidency::PinnedCoded, LayerResidency::Streamed] {
        assert!(seen.contains(&r), "the sweep reaches {r:?}: {seen:?}");
    }
    assert!(seen_held_only, "some budget holds every layer in RAM, some of them coded");
}

#[test]
fn replanning_between_residencies_changes_no_token_or_logit() {
    let name = "tiny-bf16-nonorm";
    let (model, g) = (fixture(name), golden(name));
    let trunk = pack_coded(&model, "cost-replan");
    let resident = crate::gates::engine(name, Some(2));
    let (want_ids, want_logits) = greedy(&resident, &g.prompt, 6, DecodeMode::Incremental);
    let cache = cache_of(name, &resident);
    let sweep = budgets(&trunk);
    let mut e = load(name, &trunk, (sweep[0], cache), 2).unwrap();
    let mut residencies = Vec::new();
    for &budget in [sweep[4], sweep[8], sweep[1], sweep[0], sweep[6]].iter() {
        let choice = BudgetChoice::Fixed(Budget { trunk_bytes: budget, cache_bytes: cache });
        e.replan(Some(choice), &mut |_, _| {}).unwrap();
        residencies.push(e.plan().unwrap().residency.clone());
        let (ids, logits) = greedy(&e, &g.prompt, 6, DecodeMode::Incremental);
        assert_eq!(ids, want_ids, "after a replan to {:?}", residencies.last());
        assert_eq!(bits(&logits), bits(&want_logits));
    }
    residencies.dedup();
    assert!(residencies.len() >= 3, "the replans move layers: {residencies:?}");
    std::fs::remove_dir_all(trunk).ok();
}

/// A layer held coded is checked by its `stored_crc32` when it is loaded (probe finding:
/// the field was written and never read), so a damaged one is refused then, naming it,
/// before any decode.
#[test]
fn a_damaged_layer_held_coded_is_refused_when_it_is_loaded_naming_it() {
    let name = "tiny-bf16-nonorm";
    let trunk = pack_coded(&fixture(name), "cost-damaged");
    let cache = cache_of(name, &crate::gates::engine(name, Some(1)));
    // The budget where some layer is held coded, and that layer.
    let (budget, layer) = budgets(&trunk)
        .into_iter()
        .find_map(|b| {
            let e = load(name, &trunk, (b, cache), 1).unwrap();
            let held = e.plan().unwrap().residency.iter().position(|r| *r == LayerResidency::PinnedCoded);
            held.map(|l| (b, l))
        })
        .expect("a budget that holds a layer coded");
    let v = manifest(&trunk);
    let (off, stored) =
        (v["layers"][layer]["file_off"].as_u64().unwrap(), v["layers"][layer]["stored_nbytes"].as_u64().unwrap());
    let bin = trunk.join("trunk.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    let at = (off + stored / 2) as usize;
    bytes[at] ^= 0x10;
    std::fs::write(&bin, &bytes).unwrap();
    let err = match load(name, &trunk, (budget, cache), 1) {
        Err(e) => e,
        Ok(_) => panic!("a layer held coded with a damaged byte was loaded"),
    };
    let text = err.to_string();
    assert!(matches!(err, Error::Trunk { .. }), "{err:?}");
    assert!(text.contains(&format!("layer {layer}")) && text.contains("trunk.bin"), "{text}");
    assert!(text.contains("coded bytes fail their CRC-32 check"), "{text}");
    bytes[at] ^= 0x10;
    std::fs::write(&bin, &bytes).unwrap();
    let e = load(name, &trunk, (budget, cache), 1).unwrap();
    generate_once(&e, name).unwrap();
    std::fs::remove_dir_all(trunk).ok();
}

#[test]
fn a_replan_switches_the_residency_rule_and_changes_no_token_or_logit() {
    let name = "tiny-bf16-nonorm";
    let (model, g) = (fixture(name), golden(name));
    let trunk = pack_coded(&model, "cost-rule-switch");
    let resident = crate::gates::engine(name, Some(2));
    let (want_ids, want_logits) = greedy(&resident, &g.prompt, 6, DecodeMode::Incremental);
    let cache = cache_of(name, &resident);
    let sweep = budgets(&trunk);
    let mut memory = options(&trunk, (sweep[4], cache));
    memory.residency = ResidencyRule::Prefix;
    let opts = EngineOptions { model_dir: model.clone(), threads: Some(2), memory };
    let mut e = Engine::load(&opts).unwrap();
    let choice = Some(BudgetChoice::Fixed(Budget { trunk_bytes: sweep[4], cache_bytes: cache }));
    let context = e.context_length();
    let check = |e: &Engine, rule: ResidencyRule| {
        assert_eq!(e.residency_rule(), rule);
        let (ids, logits) = greedy(e, &g.prompt, 6, DecodeMode::Incremental);
        assert_eq!(ids, want_ids, "under {rule:?}: {:?}", e.plan().unwrap().residency);
        assert_eq!(bits(&logits), bits(&want_logits));
        e.plan().unwrap().residency.clone()
    };
    let by_prefix = check(&e, ResidencyRule::Prefix);
    assert!(!by_prefix.contains(&LayerResidency::PinnedCoded), "the prefix rule pins raw or streams: {by_prefix:?}");

    e.replan_with(choice, (context, slow_drive()), &mut |_, _| {}).unwrap();
    let by_cost = check(&e, slow_drive());
    assert!(by_cost.contains(&LayerResidency::PinnedCoded), "a slow drive holds layers coded: {by_cost:?}");
    // A plain replan keeps the rule in force.
    e.replan(choice, &mut |_, _| {}).unwrap();
    assert_eq!(check(&e, slow_drive()), by_cost);

    e.replan_with(choice, (context, ResidencyRule::Prefix), &mut |_, _| {}).unwrap();
    assert_eq!(check(&e, ResidencyRule::Prefix), by_prefix, "back to the prefix's plan");
    std::fs::remove_dir_all(trunk).ok();
}
