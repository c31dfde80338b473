//! Synthetic checkpoints with the released K3 tensor graph, at any size (`k3 synth`).
//!
//! Owns: [`write_checkpoint`], which turns a [`SynthSpec`] (every config value, the expert
//! storage and a seed) into a model folder in the released layout: nested `config.json`,
//! one shard per decoder layer plus one for the model-level tensors, the index file, and
//! the tiny tokenizer files when `vocab_size` is 768 (spec §2, §6, §7, §13).
//! Must not: write anything the engine's own reader would refuse (the spec is validated
//! with [`k3_io::config::ModelConfig`] first), depend on thread count or chunk size for its bytes,
//! or hold a whole shard in memory.
//! Easy to break: the same seed must give the same bytes, byte for byte (tests compare
//! two runs); values are seeded per tensor name and per 1 MiB block (`rng`, `fill`).
//!
//! Layout: `spec` (what) → `config_json` + `plan` (names, shapes, order, headers) →
//! `fill` + `rng` (values) → `writer` (bytes on disk); `overrides` reads JSON values.

mod config_json;
mod fill;
mod overrides;
mod plan;
mod rng;
mod spec;
mod validate;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use overrides::apply_json;
pub use spec::{default_full_attn_layers, ExpertStorage, SynthSpec, MAX_SYNTH_LAYERS, PRESETS};

use k3_engine::Result;

/// Tokenizer files of `fixtures/tiny-mxfp4` (768 ids), copied into 768-vocab checkpoints.
const TOKENIZER_FILES: [(&str, &[u8]); 2] = [
    ("tiktoken.model", include_bytes!("../../fixtures/tiny-mxfp4/tiktoken.model")),
    ("tokenizer_config.json", include_bytes!("../../fixtures/tiny-mxfp4/tokenizer_config.json")),
];
/// The vocabulary those files describe.
pub const TOKENIZER_VOCAB: usize = 768;

/// Where a running [`write_checkpoint`] is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthProgress {
    /// Shard bytes handed to the OS so far.
    pub bytes_written: u64,
    /// Shard bytes of the whole checkpoint.
    pub total_bytes: u64,
    /// Zero-based shard being generated (equals `n_shards` at the end).
    pub shard: usize,
    pub n_shards: usize,
    pub elapsed: Duration,
}

impl SynthProgress {
    /// Write speed so far, in MB/s (10^6 bytes).
    pub fn mb_per_s(&self) -> f64 {
        self.bytes_written as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// What [`write_checkpoint`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSummary {
    pub out_dir: PathBuf,
    pub n_shards: usize,
    pub n_tensors: usize,
    /// Sum of the shard file sizes (headers included).
    pub shard_bytes: u64,
    /// Sum of tensor data bytes (`metadata.total_size` of the index).
    pub data_bytes: u64,
    /// Bytes of one routed expert (17,547,264 at K3 dimensions in MXFP4).
    pub expert_bytes: u64,
    /// `K`/`M` per layer, e.g. `KKMM`.
    pub layer_map: String,
    pub tokenizer_copied: bool,
    pub seconds: f64,
}

impl SynthSummary {
    /// Shard bytes per second, in MB/s.
    pub fn mb_per_s(&self) -> f64 {
        self.shard_bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }
}

/// The exact sizes `spec` would produce, without writing: (shards, tensors, shard bytes,
/// data bytes). Validates the spec.
pub fn planned_size(spec: &SynthSpec) -> Result<(usize, usize, u64, u64)> {
    let cfg = spec.validate()?;
    let shards = plan::plan_shards(spec, &cfg);
    let n_tensors = shards.iter().map(|s| s.tensors.len()).sum();
    let shard_bytes = shards.iter().map(plan::ShardPlan::file_bytes).sum();
    let data_bytes = shards.iter().map(plan::ShardPlan::data_bytes).sum();
    Ok((shards.len(), n_tensors, shard_bytes, data_bytes))
}

/// Writes the checkpoint `spec` describes into `out_dir` (absent or empty), calling
/// `progress` as bytes reach the OS.
pub fn write_checkpoint(
    spec: &SynthSpec,
    out_dir: &Path,
    progress: &mut dyn FnMut(SynthProgress),
) -> Result<SynthSummary> {
    let start = Instant::now();
    let cfg = spec.validate()?;
    let shards = plan::plan_shards(spec, &cfg);
    writer::prepare_out_dir(out_dir)?;
    writer::write_small_file(out_dir, "config.json", config_json::render(spec).as_bytes())?;
    let tokenizer_copied = spec.vocab_size == TOKENIZER_VOCAB;
    if tokenizer_copied {
        for (name, bytes) in TOKENIZER_FILES {
            writer::write_small_file(out_dir, name, bytes)?;
        }
    }
    let shard_bytes: u64 = shards.iter().map(plan::ShardPlan::file_bytes).sum();
    if let Err(e) = writer::write_shards(out_dir, &shards, spec.seed, shard_bytes, progress) {
        writer::remove_partials(out_dir);
        return Err(e);
    }
    let data_bytes: u64 = shards.iter().map(plan::ShardPlan::data_bytes).sum();
    writer::write_small_file(out_dir, "model.safetensors.index.json", index_json(&shards, data_bytes).as_bytes())?;
    let expert_bytes = if cfg.layer_kinds.len() > cfg.first_k_dense {
        plan::one_expert(spec.expert_storage, &cfg, cfg.first_k_dense, 0).iter().map(plan::TensorPlan::nbytes).sum()
    } else {
        0
    };
    Ok(SynthSummary {
        out_dir: out_dir.to_path_buf(),
        n_shards: shards.len(),
        n_tensors: shards.iter().map(|s| s.tensors.len()).sum(),
        shard_bytes,
        data_bytes,
        expert_bytes,
        layer_map: cfg.layer_map(),
        tokenizer_copied,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// `model.safetensors.index.json`: `metadata.total_size` and a sorted `weight_map`
/// (one-space indent, like the fixtures).
fn index_json(shards: &[plan::ShardPlan], data_bytes: u64) -> String {
    let map: BTreeMap<&str, &str> =
        shards.iter().flat_map(|s| s.tensors.iter().map(move |t| (t.name.as_str(), s.file_name.as_str()))).collect();
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let entries: Vec<String> = map.iter().map(|(k, v)| format!("  {}: {}", quote(k), quote(v))).collect();
    format!(
        "{{\n \"metadata\": {{\n  \"total_size\": {data_bytes}\n }},\n \"weight_map\": {{\n{}\n }}\n}}\n",
        entries.join(",\n")
    )
}
