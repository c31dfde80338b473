//! `k3_synth`: synthetic checkpoints load and run through the public engine, are
//! reproducible per seed, and follow the released layout (spec §6.2, §6.6, §6.7).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use k3_engine::advanced::model::names::{self, ExpertProj};
use k3_engine::{CancelToken, DecodeMode, Engine, EngineOptions, Error};
use k3_io::format::{Dtype, TensorIndex, TensorInfo};
use k3_synth::{write_checkpoint, ExpertStorage, SynthSpec, SynthSummary};
use k3_tests::{fixture, read_json, scratch_dir};

use crate::gates::greedy;

/// hidden 64, 5 layers `KKMKM` (dense layer 0), 6 experts top-2, MXFP4, AttnRes blocks of 2.
fn small_spec(seed: u64) -> SynthSpec {
    SynthSpec {
        hidden_size: 64,
        num_hidden_layers: 5,
        full_attn_layers: vec![3, 5],
        kda_num_heads: 2,
        kda_head_dim: 16,
        num_attention_heads: 2,
        q_lora_rank: 32,
        kv_lora_rank: 16,
        qk_nope_head_dim: 16,
        qk_rope_head_dim: 8,
        v_head_dim: 16,
        num_experts: 6,
        num_experts_per_token: 2,
        routed_expert_hidden_size: 32,
        moe_intermediate_size: 32,
        intermediate_size: 64,
        attn_res_block_size: 2,
        seed,
        ..SynthSpec::tiny()
    }
}

fn write(spec: &SynthSpec, tag: &str) -> (PathBuf, SynthSummary) {
    let dir = scratch_dir(tag);
    let mut calls = 0;
    let summary = write_checkpoint(spec, &dir, &mut |_| calls += 1).unwrap_or_else(|e| panic!("synth {tag}: {e}"));
    assert!(calls > 0, "progress was reported");
    (dir, summary)
}

fn load(dir: &Path) -> Engine {
    Engine::load(&EngineOptions::resident(dir, Some(2))).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

/// Scores `ids` and checks every logit is finite, not huge, and not constant.
fn assert_tame_logits(engine: &Engine, ids: &[u32]) {
    let logits = engine.score(ids, &CancelToken::new(), None).unwrap().unwrap();
    assert_eq!(logits.len(), ids.len() * engine.config().vocab_size);
    assert!(logits.iter().all(|x| x.is_finite() && x.abs() < 1e3), "logits must be finite and tame");
    let (lo, hi) = logits.iter().fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi - lo > 1e-3, "logits are flat: {lo}..{hi}");
}

#[test]
fn synthetic_checkpoint_loads_scores_and_decodes_incrementally_like_full_recompute() {
    let (dir, summary) = write(&small_spec(7), "synth-run");
    assert_eq!(summary.layer_map, "KKMKM");
    assert!(summary.tokenizer_copied && dir.join("tiktoken.model").is_file());
    let engine = load(&dir);
    assert_tame_logits(&engine, &[1, 2, 3, 500, 767]);
    let prompt = [11, 400, 3, 250];
    let (inc, inc_logits) = greedy(&engine, &prompt, 8, DecodeMode::Incremental);
    let (full, full_logits) = greedy(&engine, &prompt, 8, DecodeMode::FullRecompute);
    assert_eq!(inc, full, "incremental decoding must pick the tokens full recompute picks");
    assert_eq!(inc_logits, full_logits, "and with identical logits");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bf16_experts_and_switched_off_flags_load_and_run() {
    let mut spec = small_spec(3);
    spec.expert_storage = ExpertStorage::Bf16;
    spec.mla_use_output_gate = false;
    spec.latent_moe_use_norm = false;
    spec.vocab_size = 300;
    let (dir, summary) = write(&spec, "synth-bf16");
    assert!(!summary.tokenizer_copied && !dir.join("tiktoken.model").exists());
    assert_tame_logits(&load(&dir), &[1, 2, 299]);
    std::fs::remove_dir_all(dir).ok();
}

/// Every file of a folder (not sub-folders), by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// FNV-1a 64 of a file's bytes.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn the_same_seed_gives_identical_bytes_and_another_seed_different_weights() {
    let hashes = |seed, tag| {
        let (dir, _) = write(&small_spec(seed), tag);
        let h: BTreeMap<String, u64> = files(&dir).into_iter().map(|(k, v)| (k, hash(&v))).collect();
        std::fs::remove_dir_all(dir).ok();
        h
    };
    let (a, b, c) = (hashes(11, "synth-a"), hashes(11, "synth-b"), hashes(12, "synth-c"));
    assert_eq!(a, b, "same seed, same files");
    assert_eq!(a.keys().collect::<Vec<_>>(), c.keys().collect::<Vec<_>>());
    for (name, h) in &a {
        let is_shard = name.ends_with(".safetensors");
        assert_eq!(is_shard, *h != c[name], "{name}: weights differ with the seed, metadata does not");
    }
}

/// The tensors `pred` selects, in (shard, offset) order.
fn by_offset(index: &TensorIndex, pred: impl Fn(&TensorInfo) -> bool) -> Vec<&TensorInfo> {
    let mut v: Vec<&TensorInfo> = index.tensors().filter(|t| pred(t)).collect();
    v.sort_by_key(|t| (t.shard_idx, t.offset));
    v
}

/// The spans of `tensors` follow each other with no gap, in one shard.
fn assert_contiguous(what: &str, tensors: &[&TensorInfo]) {
    for w in tensors.windows(2) {
        assert_eq!(w[0].shard_idx, w[1].shard_idx, "{what}: one shard");
        assert_eq!(w[0].offset + w[0].nbytes, w[1].offset, "{what}: {} then {}", w[0].name, w[1].name);
    }
}

#[test]
fn layout_follows_the_release_shards_index_trunk_runs_and_expert_spans() {
    let spec = small_spec(1);
    let (dir, summary) = write(&spec, "synth-layout");
    let index = TensorIndex::open(&dir).unwrap();
    let n = spec.num_hidden_layers + 1;
    let want: Vec<String> = (1..=n).map(|i| format!("model-{i:05}-of-{n:06}.safetensors")).collect();
    let got: Vec<String> =
        index.shard_paths().iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_string()).collect();
    assert_eq!(got, want);
    for path in index.shard_paths() {
        let bytes = std::fs::read(path).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(len % 8, 0, "{}: header padded to 8", path.display());
        assert!(!String::from_utf8_lossy(&bytes[8..8 + len]).contains("__metadata__"));
    }
    // The index maps every tensor to the shard holding it, and totals the data bytes.
    let idx = read_json(&dir.join("model.safetensors.index.json"));
    let map = idx["weight_map"].as_object().unwrap();
    assert_eq!(map.len(), index.len());
    for t in index.tensors() {
        assert_eq!(map[&t.name].as_str().unwrap(), got[t.shard_idx], "{}", t.name);
    }
    let total: u64 = index.tensors().map(|t| t.nbytes).sum();
    assert_eq!(idx["metadata"]["total_size"].as_u64(), Some(total));
    assert_eq!((summary.data_bytes, summary.n_tensors), (total, index.len()));
    for l in 0..spec.num_hidden_layers {
        check_layer(&index, l, spec.num_experts, l > 0);
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Layer `l`'s shard: trunk first (F32 then BF16, each by name, one run), then experts,
/// each expert's six MXFP4 tensors contiguous and in order.
fn check_layer(index: &TensorIndex, l: usize, n_experts: usize, moe: bool) {
    let layer_prefix = names::layer(l, "");
    let experts = names::experts_prefix(l);
    let trunk = by_offset(index, |t| t.name.starts_with(&layer_prefix) && !t.name.starts_with(&experts));
    assert_contiguous(&format!("layer {l} trunk"), &trunk);
    assert_eq!(
        trunk[0].offset,
        index.tensors().filter(|t| t.shard_idx == trunk[0].shard_idx).map(|t| t.offset).min().unwrap()
    );
    let key = |t: &&TensorInfo| (t.dtype != Dtype::F32, t.name.clone());
    assert!(trunk.windows(2).all(|w| key(&w[0]) < key(&w[1])), "layer {l}: F32 group, then BF16, each by name");
    let shards: HashSet<usize> = trunk.iter().map(|t| t.shard_idx).collect();
    assert_eq!(shards.len(), 1, "layer {l}: one shard");
    if !moe {
        return;
    }
    let trunk_end = trunk.last().map(|t| t.offset + t.nbytes).unwrap();
    let mut names_in_order = Vec::new();
    for e in 0..n_experts {
        let six: Vec<&TensorInfo> = [ExpertProj::W1, ExpertProj::W2, ExpertProj::W3]
            .into_iter()
            .flat_map(|p| ["weight_packed", "weight_scale"].map(|part| names::expert(l, e, p, part)))
            .map(|name| index.get(&name).unwrap_or_else(|| panic!("missing {name}")))
            .collect();
        assert_contiguous(&format!("layer {l} expert {e}"), &six);
        assert_eq!(six[0].shard_idx, trunk[0].shard_idx);
        assert!(six[0].offset >= trunk_end, "experts after the trunk");
        names_in_order.push((six[0].offset, six[0].name.clone()));
    }
    names_in_order.sort();
    assert!(names_in_order.windows(2).all(|w| w[0].1 < w[1].1), "experts in name order (0, 1, 10, …)");
}

#[test]
fn tiny_preset_has_the_fixture_headers_index_and_config_exactly() {
    let (dir, _) = write(&SynthSpec::tiny(), "synth-tiny");
    let (got, want) = (files(&dir), files(&fixture("tiny-mxfp4")));
    for (name, bytes) in &want {
        if name.ends_with(".safetensors") {
            let len = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
            assert_eq!(got[name].len(), bytes.len(), "{name}: size");
            assert_eq!(got[name][..len], bytes[..len], "{name}: header bytes");
        } else if name == "config.json" {
            assert_eq!(read_json(&dir.join(name)), read_json(&fixture("tiny-mxfp4").join(name)));
        } else if name != "README.md" {
            assert_eq!(&got[name], bytes, "{name}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_non_empty_output_folder_is_refused_and_left_alone() {
    let dir = scratch_dir("synth-busy");
    std::fs::write(dir.join("keep.txt"), b"mine").unwrap();
    let err = write_checkpoint(&small_spec(0), &dir, &mut |_| {}).unwrap_err();
    assert!(matches!(err, Error::OutputFolder { .. }) && err.is_input_error(), "{err}");
    assert!(err.to_string().contains(dir.to_str().unwrap()));
    assert_eq!(files(&dir).len(), 1);
    std::fs::remove_dir_all(dir).ok();
}
