//! Issue 13: routed-expert bytes overwritten in place during a streamed run are caught by
//! the CRC32C table `k3 pack` writes (`experts.crc32c.json`): the generation fails with
//! `Error::ExpertChecksum` naming the layer, expert, shard and offset — never other ids —
//! and, once the bytes are right again, the next generation gives the golden ids. A trunk
//! without the table, or with a stale or malformed one, is refused.

use k3_io::os::{read_exact_at, write_all_at};
use std::path::{Path, PathBuf};

use k3_engine::advanced::stream::expert_dir::{locate, Placement};
use k3_engine::advanced::stream::expert_sums::EXPERT_TABLE;
use k3_engine::advanced::stream::trunk_pack::{pack_trunk, PackStage};
use k3_engine::{BudgetChoice, DecodeMode, Engine, EngineOptions, Error, MemoryOptions};
use k3_io::format::TensorIndex;
use k3_plan::Budget;
use k3_tests::{copy_checkpoint, scratch_dir};

use crate::gates::{golden, greedy};

const N_TOKENS: usize = 6;

pub(crate) fn packed(tag: &str) -> (PathBuf, PathBuf) {
    let dir = copy_checkpoint("tiny-mxfp4", tag);
    let trunk = scratch_dir(&format!("{tag}-trunk"));
    pack_trunk(&dir, &trunk, &mut |_| {}).unwrap();
    (dir, trunk)
}

/// Streamed trunk and experts at the smallest cache (top-k + 1 slots), so experts are re-read.
pub(crate) fn streamed(dir: &Path, trunk: &Path) -> Result<Engine, Error> {
    let mut memory = MemoryOptions::resident();
    let cfg = k3_engine::ModelConfig::load(&dir.join("config.json")).unwrap();
    let slots = cfg.moe.top_k as u64 + 1;
    let cache_bytes = slots * crate::streaming::slot_bytes("tiny-mxfp4");
    memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes: 300_000, cache_bytes }));
    memory.trunk_dir = Some(trunk.to_path_buf());
    memory.io_threads = 2;
    memory.record_trace = true;
    Engine::load(&EngineOptions { model_dir: dir.to_path_buf(), threads: Some(1), memory })
}

/// The golden greedy ids the resident engine gives (and the reference's, as far as it goes).
fn golden_ids() -> (Vec<u32>, Vec<u32>) {
    let g = golden("tiny-mxfp4");
    let resident = crate::gates::engine("tiny-mxfp4", Some(1));
    let (ids, _) = greedy(&resident, &g.prompt, N_TOKENS, DecodeMode::Incremental);
    let n = ids.len().min(g.greedy.len());
    assert_eq!(ids[..n], g.greedy[..n], "the resident engine gives the golden ids");
    (g.prompt, ids)
}

fn generate(e: &Engine, prompt: &[u32]) -> Result<Vec<u32>, Error> {
    let params = crate::streaming_params(N_TOKENS);
    let mut rec = crate::gates::Recorder::default();
    e.generate(&mut e.new_session(), prompt, &params, &k3_engine::CancelToken::new(), &mut rec).map(|g| g.generated)
}

/// Overwrites `len` bytes at `at` in place, keeping the file's size and modification time.
fn overwrite_in_place(path: &Path, at: u64, bytes: &[u8]) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    write_all_at(&file, bytes, at).unwrap();
    file.sync_all().unwrap();
    file.set_modified(mtime).unwrap();
}

#[test]
fn issue_13_an_expert_overwritten_in_place_fails_the_generation_and_restored_bytes_give_the_golden_ids() {
    let (prompt, want) = golden_ids();
    let (dir, trunk) = packed("expert-crc");
    let e = streamed(&dir, &trunk).unwrap();
    assert_eq!(generate(&e, &prompt).unwrap(), want, "a checked streamed run gives the golden ids");
    let trace = e.take_expert_trace();
    let n_layers = e.config().n_layers as u32;
    // The first expert used, in a layer before the last: evicted by the end of the run.
    let &(layer, expert) = trace.iter().find(|(l, _)| *l + 1 < n_layers).unwrap();
    let (layer, expert) = (layer as usize, expert as usize);
    let index = TensorIndex::open(&dir).unwrap();
    let Ok((Placement::Contiguous { shard_idx, start, len }, _)) = locate(&index, layer, expert) else {
        panic!("tiny-mxfp4's experts are contiguous")
    };
    let shard = index.shard_paths()[shard_idx].clone();
    let at = start + len as u64 / 2;
    let mut original = vec![0u8; 64];
    read_exact_at(&std::fs::File::open(&shard).unwrap(), &mut original, at).unwrap();
    let flipped: Vec<u8> = original.iter().map(|b| b ^ 0x5a).collect();
    let expect_checksum_error = |result: Result<Vec<u32>, Error>, what: &str| match result {
        Err(err @ Error::ExpertChecksum { .. }) => {
            let Error::ExpertChecksum { layer_idx, expert_idx, ref path, offset, .. } = err else { unreachable!() };
            assert_eq!((layer_idx, expert_idx), (layer, expert), "{what}: {err}");
            assert_eq!((path.as_path(), offset), (shard.as_path(), start), "{what}: {err}");
            let text = err.to_string();
            let name = shard.file_name().unwrap().to_string_lossy();
            assert!(text.contains("CRC32C") && text.contains(&*name) && text.contains(&start.to_string()), "{text}");
            assert!(!err.is_input_error(), "a failure while running");
        }
        other => panic!("{what}: expected Error::ExpertChecksum, got {other:?}"),
    };

    overwrite_in_place(&shard, at, &flipped);
    expect_checksum_error(generate(&e, &prompt), "the engine that was running");
    // The shard's size and time are unchanged, so a fresh engine loads, and fails the same.
    let fresh = streamed(&dir, &trunk).unwrap();
    expect_checksum_error(generate(&fresh, &prompt), "a fresh engine");
    expect_checksum_error(generate(&e, &prompt), "the failed read was not cached");

    overwrite_in_place(&shard, at, &original);
    assert_eq!(generate(&e, &prompt).unwrap(), want, "restored bytes: the next generation is golden");
    assert_eq!(generate(&fresh, &prompt).unwrap(), want, "restored bytes: a fresh engine is golden too");
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(trunk).ok();
}

#[test]
fn issue_13_a_trunk_without_a_current_expert_table_is_refused() {
    let (dir, trunk) = packed("expert-table");
    let path = trunk.join(EXPERT_TABLE);
    let original: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(streamed(&dir, &trunk).is_ok(), "a fresh pack loads");
    let mut stale = original.clone();
    stale["sources"][0]["modified_ns"] = 1.into();
    let mut short = original.clone();
    short["layers"][3].as_array_mut().unwrap().pop();
    let mut wide = original.clone();
    wide["layers"][2][0] = 5_000_000_000u64.into();
    let cases = [(stale, vec!["stale", "k3 pack"]), (short, vec!["layers", "k3 pack"]), (wide, vec!["layers"])];
    for (table, says) in cases {
        std::fs::write(&path, table.to_string()).unwrap();
        crate::hardening::expect_trunk_error(streamed(&dir, &trunk), &says);
    }
    std::fs::remove_file(&path).unwrap();
    crate::hardening::expect_trunk_error(streamed(&dir, &trunk), &[EXPERT_TABLE, "older", "re-run `k3 pack`"]);
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(trunk).ok();
}

#[test]
fn an_interrupted_expert_table_resumes_without_copying_the_trunk_again() {
    let (dir, clean) = packed("expert-table-resume");
    let out = scratch_dir("expert-table-resume-out");
    let interrupt_at = 5;
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pack_trunk(&dir, &out, &mut |p| {
            assert!(p.stage == PackStage::Trunk || p.layer_idx < interrupt_at, "interrupted")
        })
        .unwrap();
    }));
    assert!(crashed.is_err());
    assert!(!out.join("trunk.json").exists() && !out.join(EXPERT_TABLE).exists(), "nothing published");
    let mut stages = Vec::new();
    let resumed = pack_trunk(&dir, &out, &mut |p| stages.push((p.stage, p.layer_idx, p.bytes_done))).unwrap();
    assert_eq!(resumed.resumed_layers, 13, "every trunk layer was durable");
    assert!(stages.iter().all(|s| s.0 == PackStage::ExpertSums), "the trunk was not copied again");
    // Finished layers are reported once each (resumed), the rest once per expert.
    let per_layer = |l: usize| stages.iter().filter(|s| s.1 == l).count();
    assert_eq!(per_layer(2), 1, "layer 2 was not read again");
    assert_eq!(per_layer(7), 8, "layer 7 was read expert by expert");
    assert!(stages.windows(2).all(|w| w[0].2 <= w[1].2), "bytes done never go back");
    let table = |d: &Path| std::fs::read(d.join(EXPERT_TABLE)).unwrap();
    assert_eq!(table(&out), table(&clean), "the resumed table equals a clean one");
    assert!(!out.join("experts.crc32c-progress.json").exists());
    for d in [dir, clean, out] {
        std::fs::remove_dir_all(d).ok();
    }
}
