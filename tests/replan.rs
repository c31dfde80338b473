//! Replanning between generations (`Engine::replan`): a conversation's tokens and logits
//! are identical to a run that never replanned, across shrinking, growing, streaming ↔
//! resident switches and refused plans; the plan in force follows the replan.

use k3_engine::{BudgetChoice, CancelToken, Engine, EngineOptions, Error, MemoryOptions, Session};
use k3_plan::{Budget, PlanError};
use k3_tests::{fixture, TINY_CHECKPOINTS};

use crate::gates::{golden, Recorder};
use crate::streaming_params;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn fixed(trunk_bytes: u64, cache_bytes: u64) -> Option<BudgetChoice> {
    Some(BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes }))
}

fn load(name: &str, trunk: &std::path::Path, budget: Option<BudgetChoice>) -> Engine {
    let mut memory = MemoryOptions::resident();
    memory.budget = budget;
    memory.trunk_dir = Some(trunk.to_path_buf());
    memory.io_threads = 2;
    Engine::load(&EngineOptions { model_dir: fixture(name), threads: Some(2), memory }).unwrap()
}

/// Generates `n` more tokens in `session` (the first call with `prompt`).
fn step(engine: &Engine, session: &mut Session, prompt: &[u32], n: usize, out: &mut (Vec<u32>, Vec<f32>)) {
    let mut rec = Recorder::default();
    let g = engine.generate(session, prompt, &streaming_params(n), &CancelToken::new(), &mut rec).unwrap();
    out.0.extend(g.generated);
    out.1.extend(rec.logits);
}

/// The smallest budgets the plan accepts (one ring slot, top-k + 1 expert slots) and
/// generous ones (every layer pinned, every expert cached).
fn small_and_large(name: &str, engine: &Engine) -> (Option<BudgetChoice>, Option<BudgetChoice>) {
    let budgets = crate::trunk::trunk_budgets(name);
    let smallest_ring = budgets[0].0;
    let slot = crate::streaming::slot_bytes(name);
    let top_k = engine.config().moe.top_k as u64;
    (fixed(smallest_ring, (top_k + 1) * slot), fixed(u64::MAX, u64::MAX))
}

#[test]
fn replanning_down_and_up_mid_conversation_changes_no_token_or_logit() {
    for name in TINY_CHECKPOINTS {
        let trunk = crate::trunk::pack(name);
        let prompt = golden(name).prompt;
        let never = load(name, &trunk, fixed(u64::MAX, u64::MAX));
        let (small, large) = small_and_large(name, &never);
        let mut want = (Vec::new(), Vec::new());
        let mut session = never.new_session();
        for turn in 0..4 {
            step(&never, &mut session, if turn == 0 { &prompt } else { &[] }, 5, &mut want);
        }

        let mut e = load(name, &trunk, large);
        let n_layers = e.config().n_layers;
        let mut got = (Vec::new(), Vec::new());
        let mut session = e.new_session();
        step(&e, &mut session, &prompt, 5, &mut got);
        e.replan(small, &mut |_, _| {}).unwrap();
        let p = e.plan().unwrap().clone();
        assert_eq!((p.pinned_layers, p.ring_slots), (0, 1), "{name}: the smallest trunk streams everything");
        assert_eq!(p.cache_slots, e.config().moe.top_k as u64 + 1, "{name}");
        step(&e, &mut session, &[], 5, &mut got);
        let mut pinned_progress = Vec::new();
        e.replan(large, &mut |done, total| pinned_progress.push((done, total))).unwrap();
        assert_eq!(e.plan().unwrap().pinned_layers, n_layers, "{name}: everything pinned again");
        assert_eq!(pinned_progress.last(), Some(&(n_layers, n_layers)), "{name}: pinning reports progress");
        step(&e, &mut session, &[], 5, &mut got);
        e.replan(None, &mut |_, _| {}).unwrap();
        assert!(e.plan().is_none(), "{name}: resident");
        step(&e, &mut session, &[], 5, &mut got);

        assert_eq!(got.0, want.0, "{name}: ids across replans");
        assert_eq!(bits(&got.1), bits(&want.1), "{name}: logits across replans");
    }
}

#[test]
fn a_resident_engine_streams_after_a_replan_and_comes_back() {
    let name = "tiny-mxfp4";
    let trunk = crate::trunk::pack(name);
    let prompt = golden(name).prompt;
    let never = load(name, &trunk, None);
    let mut want = (Vec::new(), Vec::new());
    let mut session = never.new_session();
    for turn in 0..3 {
        step(&never, &mut session, if turn == 0 { &prompt } else { &[] }, 6, &mut want);
    }
    let mut e = load(name, &trunk, None);
    let (small, _) = small_and_large(name, &e);
    let mut got = (Vec::new(), Vec::new());
    let mut session = e.new_session();
    step(&e, &mut session, &prompt, 6, &mut got);
    let before = e.metrics();
    e.replan(small, &mut |_, _| {}).unwrap();
    step(&e, &mut session, &[], 6, &mut got);
    let streamed = e.metrics().since(&before);
    assert!(streamed.trunk_bytes_read > 0 && streamed.expert_bytes_read > 0, "it really streams: {streamed:?}");
    e.replan(None, &mut |_, _| {}).unwrap();
    step(&e, &mut session, &[], 6, &mut got);
    assert_eq!(got.0, want.0);
    assert_eq!(bits(&got.1), bits(&want.1));
}

#[test]
fn a_refused_replan_changes_nothing() {
    let name = "tiny-mxfp4";
    let trunk = crate::trunk::pack(name);
    let mut e = load(name, &trunk, fixed(u64::MAX, u64::MAX));
    let plan = e.plan().cloned();
    match e.replan(fixed(u64::MAX, 1), &mut |_, _| {}) {
        Err(Error::Budget(PlanError::CacheBudgetTooSmall { budget_bytes: 1, minimum_slots, .. })) => {
            assert_eq!(minimum_slots, e.config().moe.top_k as u64 + 1)
        }
        other => panic!("expected a cache budget refusal, got {other:?}"),
    }
    assert_eq!(e.plan().cloned(), plan, "the plan in force is unchanged");
    let mut out = (Vec::new(), Vec::new());
    step(&e, &mut e.new_session(), &golden(name).prompt, 3, &mut out);
    assert_eq!(out.0.len(), 3);
}

#[test]
fn the_plan_reserves_the_context_length_and_the_engine_enforces_it() {
    let name = "tiny-mxfp4";
    let load_with = |context_length: usize| {
        let mut memory = MemoryOptions::resident();
        memory.budget = fixed(u64::MAX, u64::MAX);
        memory.context_length = context_length;
        Engine::load(&EngineOptions { model_dir: fixture(name), threads: Some(1), memory }).unwrap()
    };
    let (short, long) = (load_with(24), load_with(1024));
    let per_position = short.footprint().kv_bytes_per_position;
    assert!(per_position > 0);
    let grown = long.plan().unwrap().fixed_bytes - short.plan().unwrap().fixed_bytes;
    assert_eq!(grown, (1024 - 24) * per_position, "KV is reserved for exactly the context length");

    // A prompt longer than the context is refused before anything runs, naming the limit.
    let too_long: Vec<u32> = (0..25).map(|i| 100 + i).collect();
    match short.generate(
        &mut short.new_session(),
        &too_long,
        &streaming_params(1),
        &CancelToken::new(),
        &mut Recorder::default(),
    ) {
        Err(e @ Error::ContextLimit { requested: 25, limit: 24 }) => {
            assert!(e.to_string().contains("context length of 24"), "{e}")
        }
        other => panic!("expected ContextLimit, got {other:?}"),
    }
    // A reply that reaches the context ends there: the session holds exactly 24 positions.
    let mut session = short.new_session();
    let g = short
        .generate(&mut session, &too_long[..10], &streaming_params(100), &CancelToken::new(), &mut Recorder::default())
        .unwrap();
    assert_eq!(g.finish, k3_engine::FinishReason::ContextFull);
    assert_eq!((g.generated.len(), session.tokens().len()), (14, 24));
    // The next turn has no room left.
    let next = short.generate(&mut session, &[5], &streaming_params(1), &CancelToken::new(), &mut Recorder::default());
    assert!(matches!(next, Err(Error::ContextLimit { requested: 25, limit: 24 })), "{next:?}");
    // Scoring obeys the same limit.
    assert!(matches!(short.score(&too_long, &CancelToken::new(), None), Err(Error::ContextLimit { .. })));

    // The same limit holds when every weight is resident, and bad lengths are refused.
    let mut memory = MemoryOptions::resident();
    memory.context_length = 0;
    let zero = Engine::load(&EngineOptions { model_dir: fixture(name), threads: Some(1), memory });
    assert!(matches!(zero, Err(Error::Option { option: "context-length", .. })), "a zero context is refused");
}

/// A replan down really gives memory back: on a synthetic checkpoint whose experts
/// (~130 MB) dwarf everything else, the resident set after shrinking to the smallest plan
/// stays within that plan (plus the process's own baseline), far below the large plan.
/// Runs as a child process so the resident set measured is this test's alone.
/// Linux only: giving freed heap back is the allocator's doing (glibc's `malloc_trim`,
/// `io::release`). Under Wine the process kept 139.2 MB beyond its baseline after the
/// replan (plan: 8.1 MB) — Wine's heap, not Windows', so neither system is proven here.
#[cfg(target_os = "linux")]
#[test]
fn the_resident_set_follows_a_replan_down_on_a_streaming_checkpoint() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "replan::rss_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("K3_RSS_CHILD", "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("rss after replan"), "the child ran:\n{text}");
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "run by the_resident_set_follows_a_replan_down_on_a_streaming_checkpoint as a child process"]
fn rss_child() {
    use k3_engine::pack_trunk;
    use k3_io::sysinfo::current_rss_bytes;
    use k3_synth::write_checkpoint;
    if std::env::var_os("K3_RSS_CHILD").is_none() {
        return;
    }
    let dir = k3_tests::scratch_dir("replan-rss");
    std::fs::remove_dir_all(&dir).ok();
    let spec = k3_tests::streaming_spec(5);
    let summary = write_checkpoint(&spec, &dir, &mut |_| {}).unwrap();
    let trunk = k3_tests::scratch_dir("replan-rss-trunk");
    pack_trunk(&dir, &trunk, &mut |_| {}).unwrap();
    let mut memory = MemoryOptions::resident();
    memory.budget = fixed(u64::MAX, u64::MAX);
    memory.trunk_dir = Some(trunk.clone());
    memory.io_threads = 2;
    memory.context_length = 256;
    let mb = |b: u64| b as f64 / 1e6;
    let baseline = current_rss_bytes().unwrap();
    let mut e = Engine::load(&EngineOptions { model_dir: dir.clone(), threads: Some(2), memory }).unwrap();
    let prompt: Vec<u32> = (0..96).map(|i| (i * 7 + 3) % 700).collect();
    let mut session = e.new_session();
    let mut out = (Vec::new(), Vec::new());
    step(&e, &mut session, &prompt, 8, &mut out);
    let large = e.plan().unwrap().clone();
    let rss_large = current_rss_bytes().unwrap();
    let slot = k3_plan::expert_slot_bytes(summary.expert_bytes);
    let ring = crate::trunk::trunk_budgets_of(&dir)[0].0;
    e.replan(fixed(ring, (spec.num_experts_per_token as u64 + 1) * slot), &mut |_, _| {}).unwrap();
    let small = e.plan().unwrap().clone();
    step(&e, &mut session, &[], 4, &mut out);
    let rss_small = current_rss_bytes().unwrap();
    println!(
        "baseline {:.1} MB; large plan {:.1} MB, rss {:.1} MB; small plan {:.1} MB, rss after replan {:.1} MB",
        mb(baseline),
        mb(large.total_bytes),
        mb(rss_large),
        mb(small.total_bytes),
        mb(rss_small)
    );
    assert!(rss_large - baseline > 100_000_000, "the large plan held the experts: {:.1} MB", mb(rss_large - baseline));
    // Allocator and thread bookkeeping beyond what the plan counts.
    let slack = 24_000_000;
    assert!(
        rss_small <= baseline + small.total_bytes + slack,
        "after the replan the process holds {:.1} MB beyond its baseline; the plan allows {:.1} MB",
        mb(rss_small.saturating_sub(baseline)),
        mb(small.total_bytes)
    );
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(trunk).ok();
}
