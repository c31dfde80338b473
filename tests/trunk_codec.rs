//! Issue 18 item 1: a trunk packed with `--codec huffman` streams byte-identically to a
//! raw one at every budget and thread count, reads fewer bytes, and a damaged coded layer is
//! a named error (the codec's, or the CRC-32 of the decoded bytes), never wrong tokens.

use std::path::{Path, PathBuf};

use k3_engine::advanced::stream::trunk_codec::{Staging, TrunkCodec};
use k3_engine::advanced::stream::trunk_pack::pack_trunk_coded;
use k3_engine::{BudgetChoice, CancelToken, DecodeMode, Engine, EngineOptions, Error, MemoryOptions};
use k3_plan::Budget;
use k3_tests::{fixture, scratch_dir, TINY_CHECKPOINTS};

use crate::gates::{golden, greedy};
use crate::trunk::trunk_budgets_of;

pub fn pack_coded(model: &Path, what: &str) -> PathBuf {
    let out = scratch_dir(&format!("coded-trunk-{what}"));
    pack_trunk_coded(model, &out, TrunkCodec::Huffman, &mut |_| {}).unwrap();
    out
}

pub fn manifest(trunk: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(trunk.join("trunk.json")).unwrap()).unwrap()
}

fn coded_layers(trunk: &Path) -> Vec<usize> {
    let v = manifest(trunk);
    let layers = v["layers"].as_array().unwrap();
    (0..layers.len()).filter(|&l| layers[l]["codec"] == "huffman").collect()
}

/// The staging buffers a plan counts beside the ring while `trunk`'s coded layers stream.
pub fn staging_of(trunk: &Path) -> u64 {
    let v = manifest(trunk);
    let largest = v["layers"].as_array().unwrap().iter().filter_map(|l| l["stored_nbytes"].as_u64()).max();
    Staging::most_bytes(largest.unwrap_or(0))
}

/// An engine over `trunk` whose trunk budget is `trunk_bytes` plus the trunk's staging.
fn load(model: &Path, trunk: &Path, (trunk_bytes, cache_bytes): (u64, u64), threads: usize) -> Result<Engine, Error> {
    let mut memory = MemoryOptions::resident();
    let trunk_bytes = trunk_bytes + staging_of(trunk);
    memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes }));
    memory.trunk_dir = Some(trunk.to_path_buf());
    memory.io_threads = 2;
    Engine::load(&EngineOptions { model_dir: model.to_path_buf(), threads: Some(threads), memory })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn coded_trunks_stream_byte_identically_at_every_budget() {
    let mut coded_somewhere = 0;
    for name in TINY_CHECKPOINTS {
        let (model, g) = (fixture(name), golden(name));
        let trunk = pack_coded(&model, name);
        assert_eq!(manifest(&trunk)["codec"], "huffman");
        coded_somewhere += coded_layers(&trunk).len();
        let resident = crate::gates::engine(name, Some(1));
        let (want_ids, want_logits) = greedy(&resident, &g.prompt, 8, DecodeMode::Incremental);
        let cache = (resident.config().moe.top_k as u64 + 1) * crate::streaming::slot_bytes(name);
        for (budget, what) in trunk_budgets_of(&model) {
            for threads in [1, 2] {
                let e = load(&model, &trunk, (budget, cache), threads).unwrap();
                let (ids, logits) = greedy(&e, &g.prompt, 8, DecodeMode::Incremental);
                assert_eq!(ids, want_ids, "{name}: coded, {what}, {threads} threads");
                assert_eq!(bits(&logits), bits(&want_logits), "{name}: coded logits, {what}, {threads} threads");
            }
        }
        std::fs::remove_dir_all(trunk).ok();
    }
    assert!(coded_somewhere > 0, "the tiny checkpoints' bf16 layers are coded");
}

/// A synthetic bf16 checkpoint whose layers span several codec blocks and staging
/// segments' worth of structure: coded streaming equals resident and reads ~0.67× the trunk.
#[test]
fn a_synthetic_checkpoint_streams_coded_byte_identically_and_reads_fewer_bytes() {
    use k3_synth::{write_checkpoint, SynthSpec};
    let dir = scratch_dir("synth-coded");
    std::fs::remove_dir_all(&dir).ok();
    let mut spec =
        SynthSpec { hidden_size: 384, num_experts: 16, num_experts_per_token: 4, seed: 11, ..SynthSpec::tiny() };
    spec.set_layers(6).unwrap();
    let summary = write_checkpoint(&spec, &dir, &mut |_| {}).unwrap();
    let raw_trunk = scratch_dir("synth-coded-raw");
    k3_engine::pack_trunk(&dir, &raw_trunk, &mut |_| {}).unwrap();
    let trunk = pack_coded(&dir, "synth");
    assert_eq!(coded_layers(&trunk), (0..6).collect::<Vec<_>>(), "every bf16 layer is coded");
    let resident = Engine::load(&EngineOptions::resident(&dir, Some(2))).unwrap();
    let prompt = [5, 17, 300, 42, 7, 7, 600, 1];
    let (want_ids, want_logits) = greedy(&resident, &prompt, 6, DecodeMode::Incremental);
    let index = k3_io::format::TensorIndex::open(&dir).unwrap();
    let runs = (0..6).map(|l| k3_engine::advanced::stream::trunk_pack::layer_run(&index, l).unwrap().run_len);
    let smallest = k3_plan::align_4096(runs.max().unwrap()) + 4096; // one ring slot
    let cache = (spec.num_experts_per_token as u64 + 1) * (k3_plan::align_4096(summary.expert_bytes) + 4096);
    let mut read = Vec::new();
    for t in [&raw_trunk, &trunk] {
        let e = load(&dir, t, (smallest, cache), 2).unwrap();
        let (ids, logits) = greedy(&e, &prompt, 6, DecodeMode::Incremental);
        assert_eq!(ids, want_ids);
        assert_eq!(bits(&logits), bits(&want_logits));
        read.push(e.metrics().trunk_bytes_read);
    }
    let ratio = read[1] as f64 / read[0] as f64;
    assert!(ratio < 0.70, "coded streaming reads {ratio:.3} × the raw trunk's bytes");
    for d in [dir, raw_trunk, trunk] {
        std::fs::remove_dir_all(d).ok();
    }
}

/// A two-token generation of `name`'s golden prompt, its error kept.
pub fn generate_once(e: &Engine, name: &str) -> Result<(), Error> {
    let params = crate::streaming_params(2);
    e.generate(&mut e.new_session(), &golden(name).prompt, &params, &CancelToken::new(), &mut k3_engine::NullSink)
        .map(|_| ())
}

/// Flips one byte of `trunk.bin` at `at` (after the engine opened it) and runs a generation.
fn generate_after_flip(name: &str, trunk: &Path, at: usize) -> Result<(), Error> {
    let e = load(&fixture(name), trunk, (300_000, 1 << 20), 1).unwrap();
    assert!(e.plan().unwrap().pinned_layers < e.config().n_layers);
    let bin = trunk.join("trunk.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes[at] ^= 0x10;
    std::fs::write(&bin, &bytes).unwrap();
    let result = generate_once(&e, name);
    bytes[at] ^= 0x10;
    std::fs::write(&bin, &bytes).unwrap();
    result
}

#[test]
fn a_damaged_coded_layer_fails_the_generation_with_a_named_error() {
    let name = "tiny-bf16-nonorm";
    let trunk = pack_coded(&fixture(name), "damaged");
    let v = manifest(&trunk);
    let last = *coded_layers(&trunk).last().expect("a coded layer");
    let off = v["layers"][last]["file_off"].as_u64().unwrap() as usize;
    // The directory's block count: the codec refuses the layer.
    match generate_after_flip(name, &trunk, off + 20) {
        Err(e @ Error::Trunk { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("trunk.bin") && msg.contains(&format!("layer {last}")) && msg.contains("decode"),
                "{msg}"
            );
        }
        other => panic!("a damaged directory must fail the generation, got {other:?}"),
    }
    // A low byte inside the first block: decodes to other bytes, which the CRC-32 catches.
    match generate_after_flip(name, &trunk, off + 4096 + 200) {
        Err(e @ Error::Trunk { .. }) => assert!(e.to_string().contains("CRC-32"), "{e}"),
        other => panic!("a damaged block must fail the generation, got {other:?}"),
    }
    // Restored: the same engine files serve again.
    let e = load(&fixture(name), &trunk, (300_000, 1 << 20), 1).unwrap();
    let (ids, _) = greedy(&e, &golden(name).prompt, 2, DecodeMode::Incremental);
    assert_eq!(ids.len(), 2);
    std::fs::remove_dir_all(trunk).ok();
}

#[test]
fn a_coded_manifest_that_is_truncated_or_names_another_codec_is_refused() {
    let name = "tiny-bf16-nonorm";
    let model = fixture(name);
    let trunk = pack_coded(&model, "manifest");
    let last = *coded_layers(&trunk).last().expect("a coded layer");
    let json = std::fs::read_to_string(trunk.join("trunk.json")).unwrap();
    let bin = std::fs::read(trunk.join("trunk.bin")).unwrap();
    let expect = |result: Result<Engine, Error>, says: &str| match result {
        Err(e @ Error::Trunk { .. }) => assert!(e.to_string().contains(says), "`{e}` should say `{says}`"),
        Err(other) => panic!("expected Error::Trunk ({says}), got {other}"),
        Ok(_) => panic!("expected the coded trunk to be refused ({says})"),
    };
    std::fs::write(trunk.join("trunk.bin"), &bin[..bin.len() - 4096]).unwrap();
    expect(load(&model, &trunk, (300_000, 1 << 20), 1), "truncated");
    std::fs::write(trunk.join("trunk.bin"), &bin).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["layers"][last]["codec"] = "zstd".into();
    std::fs::write(trunk.join("trunk.json"), v.to_string()).unwrap();
    expect(load(&model, &trunk, (300_000, 1 << 20), 1), "zstd");
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["layers"][last]["stored_nbytes"] = 1000.into();
    std::fs::write(trunk.join("trunk.json"), v.to_string()).unwrap();
    expect(load(&model, &trunk, (300_000, 1 << 20), 1), "stored_nbytes");
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["layers"][last].as_object_mut().unwrap().remove("stored_crc32");
    std::fs::write(trunk.join("trunk.json"), v.to_string()).unwrap();
    expect(load(&model, &trunk, (300_000, 1 << 20), 1), "`stored_crc32` missing");
    std::fs::remove_dir_all(trunk).ok();
}
