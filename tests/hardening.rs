//! Regressions of issue 13's adversarial probe: a stale or unchecked packed trunk is
//! refused (the budget must never change the output), non-finite logits are an error,
//! unbounded thread counts are refused.

use k3_engine::pack_trunk;
use k3_engine::{BudgetChoice, CancelToken, Engine, EngineOptions, Error, MemoryOptions};
use k3_plan::Budget;
use k3_tests::{copy_checkpoint, scratch_dir};

use crate::gates::Recorder;
use crate::streaming_params;

fn streamed(dir: &std::path::Path, trunk: &std::path::Path) -> Result<Engine, Error> {
    let mut memory = MemoryOptions::resident();
    memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes: 300_000, cache_bytes: 40_000 }));
    memory.trunk_dir = Some(trunk.to_path_buf());
    Engine::load(&EngineOptions { model_dir: dir.to_path_buf(), threads: Some(1), memory })
}

fn packed(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = copy_checkpoint("tiny-mxfp4", tag);
    let trunk = scratch_dir(&format!("{tag}-trunk"));
    pack_trunk(&dir, &trunk, &mut |_| {}).unwrap();
    (dir, trunk)
}

/// `result` is an `Error::Trunk` whose message holds every one of `says`.
pub(crate) fn expect_trunk_error(result: Result<Engine, Error>, says: &[&str]) {
    match result {
        Err(e @ Error::Trunk { .. }) => {
            let text = e.to_string();
            assert!(says.iter().all(|s| text.contains(s)), "{text}");
        }
        Err(other) => panic!("expected a trunk error saying {says:?}, got {other}"),
        Ok(_) => panic!("expected a trunk error saying {says:?}, the model loaded"),
    }
}

#[test]
fn issue_13_a_trunk_packed_from_other_shard_data_is_refused_as_stale() {
    let (dir, trunk) = packed("stale-trunk");
    assert!(streamed(&dir, &trunk).is_ok(), "a fresh trunk loads");
    // Same headers and size, other data: rewrite one byte of the last shard's data.
    let mut shards: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    shards.sort();
    let shard = shards.last().unwrap();
    let len = std::fs::metadata(shard).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(shard).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    k3_io::os::write_all_at(&file, &[0x5a], len - 1).unwrap();
    drop(file);
    let name = shard.file_name().unwrap().to_string_lossy().into_owned();
    expect_trunk_error(streamed(&dir, &trunk), &["stale", &name, "k3 pack"]);
}

#[test]
fn issue_13_a_trunk_layer_without_a_valid_crc_is_refused() {
    let (dir, trunk) = packed("crc-trunk");
    let json_path = trunk.join("trunk.json");
    let original: serde_json::Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    for bad in [None, Some(serde_json::Value::Null), Some("x".into()), Some((-1).into()), Some(5_000_000_000u64.into())]
    {
        let mut m = original.clone();
        let layer = m["layers"][3].as_object_mut().unwrap();
        match &bad {
            None => drop(layer.remove("crc32")),
            Some(v) => drop(layer.insert("crc32".into(), v.clone())),
        }
        std::fs::write(&json_path, m.to_string()).unwrap();
        expect_trunk_error(streamed(&dir, &trunk), &["layer 3", "crc32"]);
    }
}

#[test]
fn issue_13_non_finite_logits_are_an_error_not_tokens() {
    let dir = copy_checkpoint("tiny-mxfp4", "nan-logits");
    let path = dir.join("config.json");
    let mut cfg: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(k3_tests::set_json_key(&mut cfg, "routed_scaling_factor", &1e38.into()), "the fixture has the field");
    std::fs::write(&path, cfg.to_string()).unwrap();
    let e = Engine::load(&EngineOptions::resident(&dir, Some(1))).unwrap();
    let out = e.generate(
        &mut e.new_session(),
        &[156, 400, 651, 463],
        &streaming_params(3),
        &CancelToken::new(),
        &mut Recorder::default(),
    );
    match out {
        Err(err @ Error::NonFiniteLogits { position: 3, .. }) => {
            assert!(err.to_string().contains("non-finite"), "{err}");
            assert!(err.is_input_error());
        }
        other => panic!("expected NonFiniteLogits at position 3, got {other:?}"),
    }
    assert!(matches!(e.score(&[156, 400], &CancelToken::new(), None), Err(Error::NonFiniteLogits { .. })));
}

#[test]
fn issue_13_thread_counts_are_bounded() {
    let dir = k3_tests::fixture("tiny-mxfp4");
    let e = Engine::load(&EngineOptions::resident(&dir, Some(1_000_000)));
    assert!(matches!(e, Err(Error::Option { option: "threads", .. })), "{:?}", e.err());
    let mut memory = MemoryOptions::resident();
    memory.budget = Some(BudgetChoice::Auto);
    memory.io_threads = 100_000;
    let e = Engine::load(&EngineOptions { model_dir: dir, threads: Some(1), memory });
    assert!(matches!(e, Err(Error::Option { option: "io-threads", .. })), "{:?}", e.err());
}
