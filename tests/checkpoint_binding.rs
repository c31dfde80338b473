//! Malformed checkpoints at the binding level: a well-formed shard whose tensors do not
//! fit the config (missing, transposed, wrong dtype, inconsistent MXFP4 pairs) is refused
//! with the error naming the tensor, before any weight is used.

use std::path::{Path, PathBuf};

use k3_engine::{Engine, EngineOptions, Error};
use k3_tests::copy_checkpoint;
use serde_json::{json, Map, Value};

/// Rewrites the header of the shard holding `tensor` with `edit`, keeping the data bytes;
/// removes the optional index file so the binder, not the index cross-check, sees it.
fn corrupt(fixture: &str, tensor: &str, edit: impl FnOnce(&mut Map<String, Value>)) -> PathBuf {
    let dir = copy_checkpoint(fixture, "bind");
    std::fs::remove_file(dir.join("model.safetensors.index.json")).ok();
    let shard = shard_holding(&dir, tensor);
    let bytes = std::fs::read(&shard).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: Map<String, Value> = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    edit(&mut header);
    let mut text = serde_json::to_string(&header).unwrap();
    while !text.len().is_multiple_of(8) {
        text.push(' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&bytes[8 + n..]);
    std::fs::write(&shard, out).unwrap();
    dir
}

fn shard_holding(dir: &Path, tensor: &str) -> PathBuf {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            let bytes = std::fs::read(&path).unwrap();
            let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
            let header: Map<String, Value> = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
            if header.contains_key(tensor) {
                return path;
            }
        }
    }
    panic!("no shard holds {tensor}");
}

fn load(dir: PathBuf) -> Result<Engine, Error> {
    let result = Engine::load(&EngineOptions::resident(dir.clone(), Some(1)));
    std::fs::remove_dir_all(dir).ok();
    result
}

fn rename(from: &str, to: &str) -> impl FnOnce(&mut Map<String, Value>) {
    let (from, to) = (from.to_string(), to.to_string());
    move |h| {
        let v = h.remove(&from).unwrap();
        h.insert(to, v);
    }
}

fn set(tensor: &str, key: &str, value: Value) -> impl FnOnce(&mut Map<String, Value>) {
    let (tensor, key) = (tensor.to_string(), key.to_string());
    move |h| {
        h[&tensor][&key] = value;
    }
}

const L1: &str = "language_model.model.layers.1.";

fn expect_missing(result: Result<Engine, Error>, name: &str) {
    match result {
        Err(Error::MissingTensor { name: got }) => assert_eq!(got, name),
        Err(other) => panic!("expected MissingTensor {name}, got {other}"),
        Ok(_) => panic!("expected MissingTensor {name}, the model loaded"),
    }
}

fn expect_shape(result: Result<Engine, Error>, name: &str) {
    match result {
        Err(e @ Error::Shape { .. }) => {
            assert!(matches!(&e, Error::Shape { name: got, .. } if got == name), "{e}");
            eprintln!("refused as expected: {e}");
        }
        Err(other) => panic!("expected Shape for {name}, got {other}"),
        Ok(_) => panic!("expected Shape for {name}, the model loaded"),
    }
}

fn expect_dtype(result: Result<Engine, Error>, name: &str) {
    match result {
        Err(Error::Dtype { name: got, .. }) => assert_eq!(got, name),
        Err(other) => panic!("expected Dtype for {name}, got {other}"),
        Ok(_) => panic!("expected Dtype for {name}, the model loaded"),
    }
}

#[test]
fn missing_tensors_are_named() {
    let q = format!("{L1}self_attn.q_proj.weight");
    expect_missing(load(corrupt("tiny-mxfp4", &q, rename(&q, &format!("{q}.renamed")))), &q);
    let head = "language_model.lm_head.weight";
    expect_missing(load(corrupt("tiny-f32", head, rename(head, "language_model.model.lm_head.weight"))), head);
    let packed = format!("{L1}block_sparse_moe.experts.3.w2.weight_packed");
    let plain = format!("{L1}block_sparse_moe.experts.3.w2.weight");
    expect_missing(
        load(corrupt("tiny-mxfp4", &packed, rename(&packed, &format!("{L1}block_sparse_moe.experts.3.w2.packed")))),
        &plain,
    );
}

#[test]
fn transposed_or_resized_tensors_are_refused_by_shape() {
    let q = format!("{L1}self_attn.q_proj.weight");
    expect_shape(load(corrupt("tiny-mxfp4", &q, set(&q, "shape", json!([128, 64])))), &q);
    let router = format!("{L1}block_sparse_moe.gate.weight");
    expect_shape(load(corrupt("tiny-f32", &router, set(&router, "shape", json!([128, 8])))), &router);
    let w1 = format!("{L1}block_sparse_moe.experts.5.w1.weight");
    expect_shape(load(corrupt("tiny-f32", &w1, set(&w1, "shape", json!([64, 48])))), &w1);
    let embed = "language_model.model.embed_tokens.weight";
    expect_shape(load(corrupt("tiny-mxfp4", embed, set(embed, "shape", json!([384, 256])))), embed);
    let proj = format!("{L1}self_attention_res_proj.weight");
    expect_shape(load(corrupt("tiny-mxfp4", &proj, set(&proj, "shape", json!([2, 64])))), &proj);
    let conv = format!("{L1}self_attn.q_conv1d.weight");
    expect_shape(load(corrupt("tiny-mxfp4", &conv, set(&conv, "shape", json!([64, 4])))), &conv);
    let scale = format!("{L1}block_sparse_moe.experts.2.w1.weight_scale");
    expect_shape(load(corrupt("tiny-mxfp4", &scale, set(&scale, "shape", json!([32, 4])))), &scale);
}

#[test]
fn norm_vector_with_wrong_length_is_refused() {
    // Same byte count (64 × F32 = 128 × BF16), wrong element count.
    let norm = format!("{L1}input_layernorm.weight");
    let edit = |h: &mut Map<String, Value>| {
        h[&norm]["dtype"] = json!("F32");
        h[&norm]["shape"] = json!([64]);
    };
    expect_shape(load(corrupt("tiny-mxfp4", &norm, edit)), &norm);
}

#[test]
fn wrong_dtypes_for_the_role_are_refused() {
    let q = format!("{L1}self_attn.k_proj.weight");
    expect_dtype(load(corrupt("tiny-mxfp4", &q, set(&q, "dtype", json!("F16")))), &q);
    let packed = format!("{L1}block_sparse_moe.experts.0.w3.weight_packed");
    expect_dtype(load(corrupt("tiny-mxfp4", &packed, set(&packed, "dtype", json!("I8")))), &packed);
    let bias = format!("{L1}block_sparse_moe.gate.e_score_correction_bias");
    let edit = |h: &mut Map<String, Value>| {
        h[&bias]["dtype"] = json!("U8");
        h[&bias]["shape"] = json!([32]);
    };
    expect_dtype(load(corrupt("tiny-mxfp4", &bias, edit)), &bias);
}

#[test]
fn folders_without_shards_or_config_are_refused() {
    let dir = k3_tests::scratch_dir("noshards");
    std::fs::copy(k3_tests::fixture("tiny-f32").join("config.json"), dir.join("config.json")).unwrap();
    assert!(matches!(load(dir), Err(Error::NoShards { .. })));
    let dir = k3_tests::scratch_dir("noconfig");
    match load(dir) {
        Err(e @ Error::Io { .. }) => {
            assert!(e.is_input_error() && e.to_string().contains("config.json"), "{e}");
        }
        other => panic!("expected Io for a missing config.json, got {:?}", other.err()),
    }
}
