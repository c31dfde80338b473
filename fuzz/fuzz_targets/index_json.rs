//! `model.safetensors.index.json` checked against the shard headers
//! (`TensorIndex::check_index_file_text`, the last check of `TensorIndex::from_heads`, over
//! the micro checkpoint's headers, `data/micro.ckpt`, parsed once).
//!
//! Invariants of an accepted index, checked with serde_json and this target's own
//! duplicate-key scan: no object repeats a key; `weight_map` names every tensor of the
//! headers exactly once and nothing else, each with the shard file that holds it;
//! `metadata.total_size`, when present, is the sum of the tensors' bytes.
#![no_main]

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use k3_io::format::TensorIndex;
use k3_fuzz::{json_has_duplicate_keys, sections, Checkpoint, MICRO_CKPT, MODEL_DIR};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The micro checkpoint's headers as an index without an index file, parsed once.
fn headers() -> &'static TensorIndex {
    static HEADERS: OnceLock<TensorIndex> = OnceLock::new();
    HEADERS.get_or_init(|| {
        let parts = sections(MICRO_CKPT);
        let ckpt = Checkpoint::from_sections(&parts).expect("data/micro.ckpt has sections");
        TensorIndex::from_heads(Path::new(MODEL_DIR), &ckpt.heads(), None).expect("data/micro.ckpt is valid")
    })
}

fuzz_target!(|data: &[u8]| {
    let index = headers();
    if index.check_index_file_text(data).is_err() {
        return;
    }
    assert!(!json_has_duplicate_keys(data), "an index with a repeated key was accepted");
    let root: Value = serde_json::from_slice(data).expect("an accepted index is JSON");
    let map = root.get("weight_map").and_then(Value::as_object).expect("an accepted index has a weight_map object");
    let shard_of: HashMap<&str, String> = index
        .tensors()
        .map(|t| {
            let file = index.shard_paths()[t.shard_idx].file_name().expect("a shard file name");
            (t.name.as_str(), file.to_string_lossy().into_owned())
        })
        .collect();
    let listed: HashSet<&str> = map.keys().map(String::as_str).collect();
    let held: HashSet<&str> = shard_of.keys().copied().collect();
    assert_eq!(listed, held, "weight_map and the headers name different tensors");
    for (name, file) in map {
        assert_eq!(file.as_str(), Some(shard_of[name.as_str()].as_str()), "{name} is mapped to another shard");
    }
    if let Some(total) = root.get("metadata").and_then(|m| m.get("total_size")) {
        let sum: u64 = index.tensors().map(|t| t.nbytes).sum();
        assert_eq!(total.as_u64(), Some(sum), "total_size is not the sum of the tensors");
    }
});
