//! `trunk.json` (the packed-trunk manifest) checked against the micro checkpoint
//! (`stream::trunk_manifest::check_manifest`, the file system answered from memory).
//!
//! Input: sections: the manifest, then `trunk.bin`'s length (u64 LE). Each shard's
//! recorded identity is `{"shard": name, "bytes": its length, "modified_ns": 1}`.
//! Invariants of an accepted manifest: one entry per layer; each layer's shard, run start
//! and run length are the shards' own (`trunk_pack::layer_run`); every run starts
//! 4096-aligned and ends inside `trunk.bin` (no overflow).
#![no_main]

use std::path::{Path, PathBuf};

use k3_engine::advanced::stream::trunk_layout::TrunkFiles;
use k3_engine::advanced::stream::trunk_manifest::check_manifest;
use k3_engine::advanced::stream::trunk_pack::layer_run;
use k3_fuzz::{micro, sections, u64_at, MODEL_DIR};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

struct Memory {
    bin_len: u64,
}

impl TrunkFiles for Memory {
    fn source_identity(&self, shard: &Path) -> k3_engine::Result<Value> {
        let (_, index) = micro();
        let name = shard.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let shard_idx = index.shard_paths().iter().position(|p| p == shard).expect("one of the index's shards");
        let bytes = index.tensors().filter(|t| t.shard_idx == shard_idx).map(|t| t.offset + t.nbytes).max();
        Ok(json!({ "shard": name, "bytes": bytes.unwrap_or(0), "modified_ns": 1 }))
    }

    fn bin_len(&self, _: &Path) -> k3_engine::Result<u64> {
        Ok(self.bin_len)
    }
}

fuzz_target!(|data: &[u8]| {
    let parts = sections(data);
    let manifest = parts.first().copied().unwrap_or_default();
    let bin_len = parts.get(1).map_or(0, |b| u64_at(b, 0));
    let (cfg, index) = micro();
    let dir = PathBuf::from(MODEL_DIR).join("trunk");
    let files = Memory { bin_len };
    let Ok(trunk) = check_manifest(manifest, &dir.join("trunk.json"), dir.join("trunk.bin"), cfg, index, &files) else {
        return;
    };
    assert_eq!(trunk.layers.len(), cfg.n_layers);
    for (l, layer) in trunk.layers.iter().enumerate() {
        let run = layer_run(index, l).expect("an accepted trunk's layers have runs");
        assert_eq!((layer.shard_idx, layer.run_start, layer.run_len), (run.shard_idx, run.run_start, run.run_len));
        assert_eq!(layer.file_off % 4096, 0, "layer {l} is not aligned");
        let end = layer.file_off.checked_add(layer.run_len);
        assert!(end.is_some_and(|e| e <= bin_len), "layer {l} ends past trunk.bin ({bin_len} bytes)");
    }
});
