//! The packed trunk: packing is checked and atomic; streaming the trunk through a pinned
//! prefix and a ring gives byte-identical ids and logits; a damaged or disagreeing trunk
//! is refused (or fails the generation) with a named error, never wrong tokens.

use std::path::{Path, PathBuf};

use k3_engine::advanced::stream::trunk_pack::{layer_run, pack_trunk, PackStage};
use k3_engine::{BudgetChoice, CancelToken, DecodeMode, Engine, EngineOptions, Error, MemoryOptions};
use k3_plan::{Budget, VocabPlacement};
use k3_tests::{fixture, scratch_dir, TINY_CHECKPOINTS};

use crate::gates::{golden, greedy};

pub fn pack(name: &str) -> PathBuf {
    let out = scratch_dir(&format!("trunk-{name}"));
    let mut calls = 0;
    pack_trunk(&fixture(name), &out, &mut |_| calls += 1).unwrap();
    assert!(calls > 0, "progress is reported");
    out
}

fn engine(name: &str, trunk: &Path, trunk_bytes: u64, cache_bytes: u64, threads: usize) -> Result<Engine, Error> {
    let mut memory = MemoryOptions::resident();
    memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes }));
    memory.trunk_dir = Some(trunk.to_path_buf());
    memory.io_threads = 2;
    Engine::load(&EngineOptions { model_dir: fixture(name), threads: Some(threads), memory })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A sweep of trunk budgets from the smallest ring to everything pinned.
pub fn trunk_budgets(name: &str) -> Vec<(u64, &'static str)> {
    trunk_budgets_of(&fixture(name))
}

/// [`trunk_budgets`] of the checkpoint in `dir`.
pub fn trunk_budgets_of(dir: &Path) -> Vec<(u64, &'static str)> {
    let cfg = k3_engine::ModelConfig::load(&dir.join("config.json")).unwrap();
    let index = k3_io::format::TensorIndex::open(dir).unwrap();
    let runs: Vec<u64> = (0..cfg.n_layers).map(|l| layer_run(&index, l).unwrap().run_len).collect();
    let slot = |from: usize| k3_plan::align_4096(*runs[from..].iter().max().unwrap()) + 4096;
    let all: u64 = runs.iter().sum();
    let prefix = |p: usize| runs[..p].iter().sum::<u64>();
    vec![
        (slot(0), "smallest ring"),
        (2 * slot(0), "two slots"),
        (prefix(3) + slot(3), "prefix + one slot"),
        (prefix(6) + 2 * slot(6), "prefix + two slots"),
        (all, "all pinned"),
    ]
}

/// A tiny checkpoint's golden prompt, its packed trunk, the resident run's 10 greedy tokens
/// and logits, and the smallest expert cache (top-k + 1 slots).
struct Reference {
    g: crate::gates::Golden,
    trunk: PathBuf,
    want_ids: Vec<u32>,
    want_logits: Vec<f32>,
    min_cache: u64,
    n_layers: usize,
}

fn reference(name: &str) -> Reference {
    let g = golden(name);
    let trunk = pack(name);
    let resident = crate::gates::engine(name, Some(1));
    let (want_ids, want_logits) = greedy(&resident, &g.prompt, 10, DecodeMode::Incremental);
    let min_cache = (resident.config().moe.top_k as u64 + 1) * crate::streaming::slot_bytes(name);
    Reference { g, trunk, want_ids, want_logits, min_cache, n_layers: resident.config().n_layers }
}

#[test]
fn every_trunk_budget_gives_byte_identical_tokens_and_logits() {
    for name in TINY_CHECKPOINTS {
        let Reference { g, trunk, want_ids, want_logits, min_cache, n_layers: n } = reference(name);
        let mut shapes = std::collections::BTreeSet::new();
        for (budget, what) in trunk_budgets(name) {
            for threads in [1, 2] {
                let e = engine(name, &trunk, budget, min_cache, threads).unwrap();
                let plan = e.plan().unwrap().clone();
                shapes.insert(match (plan.pinned_layers, plan.ring_slots) {
                    (p, 0) if p == n => "all pinned",
                    (0, 1) => "ring only, one slot",
                    (0, 2) => "ring only, two slots",
                    (_, 1) => "pinned prefix + one slot",
                    _ => "pinned prefix + two slots",
                });
                let (ids, logits) = greedy(&e, &g.prompt, 10, DecodeMode::Incremental);
                assert_eq!(ids, want_ids, "{name}: {what}, {threads} threads");
                assert_eq!(bits(&logits), bits(&want_logits), "{name}: logits, {what}, {threads} threads");
                let (full_ids, _) = greedy(&e, &g.prompt, 4, DecodeMode::FullRecompute);
                assert_eq!(full_ids, want_ids[..4], "{name}: full recompute, {what}");
                assert!(plan.trunk_bytes <= budget, "{name}: {what}");
                // The embeddings and head are read when used exactly when a layer streams.
                let streams = plan.pinned_layers < n;
                let read = if streams { VocabPlacement::Read } else { VocabPlacement::Held };
                assert_eq!(plan.vocab, read, "{name}: {what}");
                let m = e.metrics();
                if plan.pinned_layers < e.config().n_layers {
                    assert!(m.trunk_bytes_read > 0, "{name}: {what} streams the trunk");
                } else {
                    assert_eq!(m.trunk_bytes_read, 0, "{name}: {what} reads nothing");
                }
                eprintln!(
                    "{name}: {what}: pinned {}/{}, ring {}, trunk read {} B",
                    plan.pinned_layers,
                    e.config().n_layers,
                    plan.ring_slots,
                    m.trunk_bytes_read
                );
            }
        }
        assert!(shapes.len() >= 4, "{name}: the sweep covers the plan shapes, got {shapes:?}");
        std::fs::remove_dir_all(trunk).ok();
    }
}

fn expect_trunk_error(result: Result<Engine, Error>, file: &str, says: &str) {
    match result {
        Err(e @ Error::Trunk { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(file) && msg.contains(says), "`{msg}` should name {file} and say `{says}`");
        }
        Err(other) => panic!("expected Error::Trunk ({says}), got {other}"),
        Ok(_) => panic!("expected the packed trunk to be refused ({says})"),
    }
}

#[test]
fn an_interrupted_or_damaged_pack_is_refused() {
    let name = "tiny-f32";
    let trunk = pack(name);
    // Interrupted: only the partial files exist.
    let interrupted = scratch_dir("interrupted");
    std::fs::copy(trunk.join("trunk.bin"), interrupted.join("trunk.bin.partial")).unwrap();
    expect_trunk_error(engine(name, &interrupted, 1 << 20, 1 << 20, 1), "trunk.json", "interrupted pack");
    // Truncated trunk.bin.
    let truncated = scratch_dir("truncated");
    std::fs::copy(trunk.join("trunk.json"), truncated.join("trunk.json")).unwrap();
    let bin = std::fs::read(trunk.join("trunk.bin")).unwrap();
    std::fs::write(truncated.join("trunk.bin"), &bin[..bin.len() - 5000]).unwrap();
    expect_trunk_error(engine(name, &truncated, 1 << 20, 1 << 20, 1), "trunk.bin", "truncated");
    // A manifest that disagrees with the shards.
    let disagree = scratch_dir("disagree");
    std::fs::copy(trunk.join("trunk.bin"), disagree.join("trunk.bin")).unwrap();
    let json = std::fs::read_to_string(trunk.join("trunk.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tensors = v["layers"][4]["tensors"].as_object_mut().unwrap();
    let first = tensors.keys().next().unwrap().clone();
    tensors.get_mut(&first).unwrap()["dtype"] = "BF16".into();
    std::fs::write(disagree.join("trunk.json"), v.to_string()).unwrap();
    expect_trunk_error(engine(name, &disagree, 1 << 20, 1 << 20, 1), "trunk.json", "layer 4");
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["layers"][2]["blocks"] = serde_json::json!([]);
    std::fs::write(disagree.join("trunk.json"), v.to_string()).unwrap();
    expect_trunk_error(engine(name, &disagree, 1 << 20, 1 << 20, 1), "trunk.json", "codec");
    // Probe findings: a `file_off` near u64::MAX wrapped past the size check (then an EINVAL
    // read), and an unknown `format` was accepted. Both are refused naming the field.
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["layers"][3]["file_off"] = (u64::MAX - 4095).into();
    std::fs::write(disagree.join("trunk.json"), v.to_string()).unwrap();
    expect_trunk_error(engine(name, &disagree, 1 << 20, 1 << 20, 1), "trunk.json", "layer 3: `file_off`");
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["format"] = "k3-desktop trunk v9".into();
    std::fs::write(disagree.join("trunk.json"), v.to_string()).unwrap();
    expect_trunk_error(engine(name, &disagree, 1 << 20, 1 << 20, 1), "trunk.json", "`format`");
    for d in [trunk, interrupted, truncated, disagree] {
        std::fs::remove_dir_all(d).ok();
    }
}

#[test]
fn a_corrupted_trunk_byte_fails_the_generation() {
    let name = "tiny-mxfp4";
    let g = golden(name);
    let trunk = pack(name);
    let e = engine(name, &trunk, 300_000, 1 << 20, 1).unwrap();
    assert!(e.plan().unwrap().pinned_layers < 12);
    // Flip one byte in the last layer's run after the engine validated the manifest.
    let bin = trunk.join("trunk.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trunk.join("trunk.json")).unwrap()).unwrap();
    let off = v["layers"][12]["file_off"].as_u64().unwrap() as usize + 100;
    bytes[off] ^= 0x40;
    std::fs::write(&bin, bytes).unwrap();
    let result = e.generate(
        &mut e.new_session(),
        &g.prompt,
        &crate::streaming_params(3),
        &CancelToken::new(),
        &mut k3_engine::NullSink,
    );
    match result {
        Err(err @ Error::Trunk { .. }) => assert!(err.to_string().contains("CRC-32"), "{err}"),
        Err(other) => panic!("expected a CRC error, got {other}"),
        Ok(out) => panic!("a corrupted trunk must fail, got {:?}", out.generated),
    }
    std::fs::remove_dir_all(trunk).ok();
}

#[test]
fn packing_refuses_a_layer_that_is_not_one_contiguous_run() {
    // A one-layer shard whose trunk tensors have a routed expert between them.
    let dir = scratch_dir("noncontig");
    let names = [
        "language_model.model.layers.0.input_layernorm.weight",
        "language_model.model.layers.0.block_sparse_moe.experts.0.w1.weight",
        "language_model.model.layers.0.post_attention_layernorm.weight",
    ];
    let mut header = serde_json::Map::new();
    for (i, n) in names.iter().enumerate() {
        header.insert(
            n.to_string(),
            serde_json::json!({ "dtype": "F32", "shape": [2], "data_offsets": [i * 8, i * 8 + 8] }),
        );
    }
    let text = serde_json::Value::Object(header).to_string();
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(text.as_bytes());
    file.extend_from_slice(&[0u8; 24]);
    std::fs::write(dir.join("model.safetensors"), file).unwrap();
    let index = k3_io::format::TensorIndex::open(&dir).unwrap();
    match layer_run(&index, 0) {
        Err(e @ Error::Pack { layer_idx: 0, .. }) => assert!(e.to_string().contains("not contiguous"), "{e}"),
        Err(other) => panic!("expected Error::Pack, got {other}"),
        Ok(_) => panic!("a split trunk must be refused"),
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A synthetic checkpoint large enough that small budgets really stream: 8 layers of
/// hidden 256 with 32 experts each, so the trunk and the experts are several MB and a
/// budget of one ring slot and top-k + 1 expert slots reads most of them on every token.
#[test]
fn a_synthetic_checkpoint_streams_byte_identically_at_every_budget() {
    use k3_synth::{write_checkpoint, SynthSpec};
    let dir = scratch_dir("synth-stream");
    std::fs::remove_dir_all(&dir).ok();
    let mut spec =
        SynthSpec { hidden_size: 256, num_experts: 32, num_experts_per_token: 4, seed: 7, ..SynthSpec::tiny() };
    spec.set_layers(8).unwrap();
    let summary = write_checkpoint(&spec, &dir, &mut |_| {}).unwrap();
    let trunk = scratch_dir("synth-trunk");
    pack_trunk(&dir, &trunk, &mut |_| {}).unwrap();
    let load = |trunk_bytes: u64, cache_bytes: u64, threads: usize| {
        let mut memory = MemoryOptions::resident();
        memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes }));
        memory.trunk_dir = Some(trunk.clone());
        Engine::load(&EngineOptions { model_dir: dir.clone(), threads: Some(threads), memory }).unwrap()
    };
    let resident = Engine::load(&EngineOptions::resident(&dir, Some(2))).unwrap();
    let prompt = [5, 17, 300, 42, 7, 7, 600, 1];
    let (want_ids, want_logits) = greedy(&resident, &prompt, 8, DecodeMode::Incremental);
    let cfg = resident.config().clone();
    let index = k3_io::format::TensorIndex::open(&dir).unwrap();
    let runs: Vec<u64> = (0..cfg.n_layers).map(|l| layer_run(&index, l).unwrap().run_len).collect();
    let slot = |from: usize| k3_plan::align_4096(*runs[from..].iter().max().unwrap()) + 4096;
    let expert_slot = k3_plan::align_4096(summary.expert_bytes) + 4096;
    let min_cache = (cfg.moe.top_k as u64 + 1) * expert_slot;
    let all: u64 = runs.iter().sum();
    for (trunk_bytes, cache_bytes, what) in [
        (all, u64::MAX, "all pinned, every expert cached"),
        (runs[..3].iter().sum::<u64>() + 2 * slot(3), 8 * expert_slot, "pinned prefix + ring"),
        (slot(0), min_cache, "one ring slot, smallest cache"),
    ] {
        for threads in [1, 2] {
            let e = load(trunk_bytes, cache_bytes, threads);
            let (ids, logits) = greedy(&e, &prompt, 8, DecodeMode::Incremental);
            assert_eq!(ids, want_ids, "{what}, {threads} threads");
            assert_eq!(bits(&logits), bits(&want_logits), "{what}, {threads} threads: logits");
            let (p, m) = (e.plan().unwrap().clone(), e.metrics());
            eprintln!(
                "{what} ({threads} t): pinned {}/{}, ring {}, {} cache slots; read trunk {} B, experts {} B, true hits {:.0} %",
                p.pinned_layers, cfg.n_layers, p.ring_slots, p.cache_slots, m.trunk_bytes_read, m.expert_bytes_read, 100.0 * m.true_hit_rate()
            );
        }
    }
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(trunk).ok();
}

#[test]
fn an_interrupted_pack_resumes_after_its_last_durable_layer_and_equals_a_clean_pack() {
    let clean = pack("tiny-mxfp4");
    let model = scratch_dir("pack-resume-model");
    for e in std::fs::read_dir(fixture("tiny-mxfp4")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, model.join(p.file_name().unwrap())).unwrap();
        }
    }
    let out = scratch_dir("pack-resume-out");
    let interrupt_at = 6;
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pack_trunk(&model, &out, &mut |p| {
            assert!(p.stage != PackStage::Trunk || p.layer_idx < interrupt_at, "interrupted")
        })
        .unwrap();
    }));
    assert!(crashed.is_err());
    assert!(!out.join("trunk.json").exists(), "an interrupted pack published a manifest");
    let resumed = pack_trunk(&model, &out, &mut |p| {
        let copied = p.stage == PackStage::Trunk;
        assert!(!copied || p.layer_idx >= interrupt_at, "layer {} copied again", p.layer_idx)
    })
    .unwrap();
    assert_eq!(resumed.resumed_layers, interrupt_at);
    assert_eq!(std::fs::read(out.join("trunk.bin")).unwrap(), std::fs::read(clean.join("trunk.bin")).unwrap());
    let manifest = |dir: &Path| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("trunk.json")).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("sources");
        v
    };
    assert_eq!(manifest(&out), manifest(&clean));
    assert!(!out.join("trunk.pack-progress.json").exists());

    // A shard rewritten between the two runs: the pack starts over.
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pack_trunk(&model, &out, &mut |p| {
            assert!(p.stage != PackStage::Trunk || p.layer_idx < interrupt_at, "interrupted")
        })
        .unwrap();
    }));
    assert!(crashed.is_err());
    let shard = model.join("model-00001-of-000014.safetensors");
    let bytes = std::fs::read(&shard).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&shard, bytes).unwrap();
    let again = pack_trunk(&model, &out, &mut |_| {}).unwrap();
    assert_eq!(again.resumed_layers, 0, "resumed over a changed shard");
    assert_eq!(std::fs::read(out.join("trunk.bin")).unwrap(), std::fs::read(clean.join("trunk.bin")).unwrap());
}

/// Opening with a plan that pins a prefix reports each pinned layer as it is read (the
/// wizard's "first load: layer n/N"), and a plan that pins nothing reports nothing.
#[test]
fn loading_reports_each_pinned_trunk_layer_in_order() {
    let name = "tiny-mxfp4";
    let trunk = pack(name);
    let (prefix_budget, _) = trunk_budgets(name)[2];
    let (ring_only, _) = trunk_budgets(name)[0];
    let open = |trunk_bytes: u64| {
        let mut memory = MemoryOptions::resident();
        memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes: 1 << 20 }));
        memory.trunk_dir = Some(trunk.clone());
        let mut heard = Vec::new();
        let options = EngineOptions { model_dir: fixture(name), threads: Some(1), memory };
        let engine = Engine::load_with_progress(&options, &mut |done, total| heard.push((done, total))).unwrap();
        (engine.plan().unwrap().pinned_layers, heard)
    };
    let (pinned, heard) = open(prefix_budget);
    assert!(pinned >= 1, "the budget pins a prefix");
    assert_eq!(heard, (1..=pinned).map(|l| (l, pinned)).collect::<Vec<_>>());
    let (pinned, heard) = open(ring_only);
    assert_eq!((pinned, heard), (0, vec![]));
}

/// The trunk budgets below the whole-layer ring's floor that stream every layer in pieces:
/// one slot for the largest matrix (and one layer's small tensors), and two (with the
/// read-ahead's small tensors).
fn piece_budgets(dir: &Path) -> Vec<(u64, &'static str)> {
    let cfg = k3_engine::ModelConfig::load(&dir.join("config.json")).unwrap();
    let index = k3_io::format::TensorIndex::open(dir).unwrap();
    let fp = k3_engine::advanced::stream::footprint::footprint(&cfg, &index).unwrap();
    let cost = |slots: u64| {
        let (slot, eager) = k3_plan::piece_ring(&fp.layer_trunk_bytes, &fp.layer_pieces, 0, slots).unwrap();
        slots * slot + eager
    };
    let whole_floor = k3_plan::ring_slot_bytes_for(*fp.layer_trunk_bytes.iter().max().unwrap());
    assert!(
        cost(1) < whole_floor,
        "{}: a piece ring ({}) is below the whole-layer floor ({whole_floor})",
        dir.display(),
        cost(1)
    );
    vec![(cost(1), "pieces, one slot"), (cost(2).min(whole_floor - 1), "pieces, two slots")]
}

#[test]
fn layers_larger_than_a_slot_stream_in_pieces_byte_identically() {
    for name in TINY_CHECKPOINTS {
        let Reference { g, trunk, want_ids, want_logits, min_cache, n_layers } = reference(name);
        let largest_layer = {
            let index = k3_io::format::TensorIndex::open(&fixture(name)).unwrap();
            (0..n_layers).map(|l| layer_run(&index, l).unwrap().run_len).max().unwrap()
        };
        for (budget, what) in piece_budgets(&fixture(name)) {
            for threads in [1, 2] {
                let e = engine(name, &trunk, budget, min_cache, threads).unwrap();
                let plan = e.plan().unwrap().clone();
                assert!(plan.trunk_bytes <= budget, "{name}: {what}");
                assert!(plan.ring_slot_bytes < largest_layer && plan.piece_eager_bytes > 0, "{name}: {what}: {plan:?}");
                let (ids, logits) = greedy(&e, &g.prompt, 10, DecodeMode::Incremental);
                assert_eq!(ids, want_ids, "{name}: {what}, {threads} threads");
                assert_eq!(bits(&logits), bits(&want_logits), "{name}: logits, {what}, {threads} threads");
                let (full_ids, _) = greedy(&e, &g.prompt, 4, DecodeMode::FullRecompute);
                assert_eq!(full_ids, want_ids[..4], "{name}: full recompute, {what}");
                let m = e.metrics();
                eprintln!(
                    "{name}: {what} ({threads} t): ring {} × {} B + {} B small tensors, trunk read {} B",
                    plan.ring_slots, plan.ring_slot_bytes, plan.piece_eager_bytes, m.trunk_bytes_read
                );
            }
        }
        std::fs::remove_dir_all(trunk).ok();
    }
}

#[test]
fn a_corrupted_piece_fails_the_generation_naming_its_tensor_and_an_old_trunk_streams_whole() {
    let name = "k3-demo";
    let g = golden(name);
    let trunk = pack(name);
    let (budget, _) = piece_budgets(&fixture(name))[0];
    let e = engine(name, &trunk, budget, 1 << 20, 1).unwrap();
    assert!(e.plan().unwrap().piece_eager_bytes > 0, "the plan streams in pieces");
    // Flip one byte in the middle of the last layer's largest matrix.
    let json = trunk.join("trunk.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let last = v["layers"].as_array().unwrap().len() - 1;
    let (tensor, t) = v["layers"][last]["tensors"]
        .as_object()
        .unwrap()
        .iter()
        .max_by_key(|(_, t)| t["nbytes"].as_u64().unwrap())
        .map(|(n, t)| (n.clone(), t.clone()))
        .unwrap();
    let off = v["layers"][last]["file_off"].as_u64().unwrap()
        + t["off"].as_u64().unwrap()
        + t["nbytes"].as_u64().unwrap() / 2;
    let bin = trunk.join("trunk.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes[off as usize] ^= 0x40;
    std::fs::write(&bin, &bytes).unwrap();
    let params = crate::streaming_params(3);
    match e.generate(&mut e.new_session(), &g.prompt, &params, &CancelToken::new(), &mut k3_engine::NullSink) {
        Err(err @ Error::Trunk { .. }) => {
            let msg = err.to_string();
            assert!(msg.contains("CRC-32") && msg.contains(&tensor), "{msg}");
        }
        Err(other) => panic!("expected a CRC error, got {other}"),
        Ok(out) => panic!("a corrupted piece must fail, got {:?}", out.generated),
    }
    // A trunk packed before per-tensor checksums cannot stream in pieces: the same budget
    // is refused with the whole-layer floor.
    bytes[off as usize] ^= 0x40;
    std::fs::write(&bin, &bytes).unwrap();
    for layer in v["layers"].as_array_mut().unwrap() {
        for t in layer["tensors"].as_object_mut().unwrap().values_mut() {
            t.as_object_mut().unwrap().remove("crc32");
        }
    }
    std::fs::write(&json, v.to_string()).unwrap();
    match engine(name, &trunk, budget, 1 << 20, 1) {
        Err(Error::Budget(k3_plan::PlanError::TrunkBudgetTooSmall { minimum_bytes, .. })) => {
            assert!(minimum_bytes > budget, "{minimum_bytes}")
        }
        Err(other) => panic!("expected the budget to be refused, got {other}"),
        Ok(_) => panic!("an old trunk cannot stream in pieces"),
    }
    std::fs::remove_dir_all(trunk).ok();
}
