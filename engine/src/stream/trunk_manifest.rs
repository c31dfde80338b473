//! Reading a packed trunk (`trunk.json` + `trunk.bin`) and proving it matches the
//! checkpoint before any of it is used.
//!
//! Owns: the manifest's fields (spec §8: `n_layers`, `align`, per layer `shard`,
//! `run_start`, `nbytes`, `file_off`, `tensors{off, nbytes, dtype, shape}`, plus our
//! `run_len`, a required `crc32` (and one per tensor since piece streaming; a trunk packed
//! before has none and streams its layers whole), and `sources`: each shard's name, size and modification
//! time at packing), and the cross-check against the shard index: the same shards, unchanged
//! since packing (a stale trunk would serve old weights while a resident run serves new ones:
//! the budget would change the output), every trunk tensor present with the same dtype,
//! shape, size and position, nothing extra, and `trunk.bin` long enough.
//! The expert checksum table beside it is required too (`stream::expert_sums`): a trunk
//! packed without one is refused with "re-run `k3 pack`".
//! A layer coded by `k3 pack --codec huffman` adds `codec` and `stored_nbytes` (a 4096
//! multiple: the coded bytes at `file_off`).
//! Must not: accept a manifest that uses a codec it does not implement (another `codec`
//! name, `blocks`), or one that disagrees with the shards in any field.
//! Layout: [`open_packed_trunk`] reads the files and asks the file system through
//! [`TrunkFiles`]; [`check_manifest`] is every check on the manifest's bytes (what the
//! fuzz target calls with the answers in memory).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::format::TensorIndex;
use crate::stream::expert_sums::{open_expert_sums, ExpertSums};
use crate::stream::trunk_codec::TrunkCodec;
use crate::stream::trunk_layout::{
    check_sources, layer_run, CodedSpan, Disk, PackedLayer, PackedTensor, TrunkFiles, TRUNK_ALIGN, TRUNK_FORMAT,
};

/// A validated packed trunk, with the expert checksum table packed beside it.
#[derive(Debug, Clone)]
pub struct PackedTrunk {
    pub bin_path: PathBuf,
    pub layers: Vec<PackedLayer>,
    /// One CRC32C per routed expert (`experts.crc32c.json`), checked on every expert read.
    pub experts: Arc<ExpertSums>,
}

impl PackedTrunk {
    /// Each layer's bytes in `trunk.bin` when any layer is stored coded (what a plan may
    /// hold coded in RAM), else `None`.
    pub fn stored_bytes(&self) -> Option<Vec<u64>> {
        let coded = self.layers.iter().any(|p| p.coding.is_some());
        coded.then(|| self.layers.iter().map(PackedLayer::stored_len).collect())
    }

    /// The largest coded layer's stored bytes (0 when none is coded).
    pub fn largest_coded(&self) -> u64 {
        self.layers.iter().filter_map(|p| p.coding).map(|c| c.stored_len).max().unwrap_or(0)
    }

    /// What a plan needs of this trunk's coding: stored sizes and staging bytes.
    pub fn coded_layout(&self) -> Option<CodedLayout> {
        let stored = self.stored_bytes()?;
        Some(CodedLayout {
            stored,
            staging_bytes: crate::stream::trunk_codec::Staging::most_bytes(self.largest_coded()),
        })
    }
}

/// A coded trunk's figures the planner weighs ([`k3_plan::CodedLayers`], owned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodedLayout {
    pub stored: Vec<u64>,
    pub staging_bytes: u64,
}

impl CodedLayout {
    pub fn layers(&self) -> k3_plan::CodedLayers<'_> {
        k3_plan::CodedLayers { stored_bytes: &self.stored, staging_bytes: self.staging_bytes }
    }
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::Trunk { path: path.to_path_buf(), reason: reason.into() }
}

/// Opens and validates `dir/trunk.json` and `dir/trunk.bin` against the checkpoint.
pub fn open_packed_trunk(dir: &Path, cfg: &ModelConfig, index: &TensorIndex) -> Result<PackedTrunk> {
    let json_path = dir.join("trunk.json");
    let bin_path = dir.join("trunk.bin");
    if !json_path.is_file() {
        let partial = dir.join("trunk.json.partial").exists() || dir.join("trunk.bin.partial").exists();
        let hint = if partial {
            " (an interrupted pack left *.partial files: run `k3 pack` again)"
        } else {
            " (run `k3 pack`)"
        };
        return Err(bad(&json_path, format!("no packed trunk here{hint}")));
    }
    let raw = std::fs::read(&json_path).map_err(|e| Error::io(&json_path, e))?;
    let CheckedManifest { bin_path, layers } = check_manifest(&raw, &json_path, bin_path, cfg, index, &Disk)?;
    let experts = open_expert_sums(dir, cfg, index)?;
    Ok(PackedTrunk { bin_path, layers, experts })
}

/// What `trunk.json` says, checked: where `trunk.bin` is and each layer's place in it.
#[derive(Debug, Clone)]
pub struct CheckedManifest {
    pub bin_path: PathBuf,
    pub layers: Vec<PackedLayer>,
}

/// Every check of [`open_packed_trunk`] on the bytes of `trunk.json` (read from
/// `json_path`), with `files` answering for the shards and `trunk.bin` at `bin_path`.
pub fn check_manifest(
    raw: &[u8],
    json_path: &Path,
    bin_path: PathBuf,
    cfg: &ModelConfig,
    index: &TensorIndex,
    files: &dyn TrunkFiles,
) -> Result<CheckedManifest> {
    let json_path = json_path.to_path_buf();
    let root = crate::json::parse_object(raw).map_err(|m| bad(&json_path, m))?;
    let int = |v: &Value, what: &str| {
        v.as_u64().ok_or_else(|| bad(&json_path, format!("`{what}` must be a non-negative integer")))
    };
    if int(root.get("align").unwrap_or(&Value::Null), "align")? != TRUNK_ALIGN {
        return Err(bad(&json_path, "`align` must be 4096"));
    }
    // The reference packer writes no `format`; ours writes TRUNK_FORMAT. Any other is a
    // layout this engine does not know (probe finding: unknown strings were accepted).
    match root.get("format") {
        None => {}
        Some(Value::String(f)) if f == TRUNK_FORMAT => {}
        Some(other) => {
            return Err(bad(&json_path, format!("`format` {other} is not one this engine reads (\"{TRUNK_FORMAT}\")")))
        }
    }
    if int(root.get("n_layers").unwrap_or(&Value::Null), "n_layers")? != cfg.n_layers as u64 {
        return Err(bad(&json_path, format!("`n_layers` disagrees with config.json ({})", cfg.n_layers)));
    }
    let entries =
        root.get("layers").and_then(Value::as_array).ok_or_else(|| bad(&json_path, "`layers` must be an array"))?;
    if entries.len() != cfg.n_layers {
        return Err(bad(&json_path, format!("{} layer entries for {} layers", entries.len(), cfg.n_layers)));
    }
    check_sources(&json_path, root.get("sources"), index, files)?;
    let bin_len = files.bin_len(&bin_path)?;
    let mut layers = Vec::with_capacity(entries.len());
    for (l, entry) in entries.iter().enumerate() {
        let layer = check_layer(&json_path, l, entry, index)?;
        // Checked: a `file_off` near u64::MAX wrapped past the size check (probe finding).
        let Some(end) = layer.file_off.checked_add(layer.stored_len()) else {
            return Err(bad(&json_path, format!("layer {l}: `file_off` {} is past any file", layer.file_off)));
        };
        if end > bin_len {
            return Err(bad(&bin_path, format!("truncated: layer {l} ends at byte {end} but the file has {bin_len}")));
        }
        layers.push(layer);
    }
    Ok(CheckedManifest { bin_path, layers })
}

/// Checks one manifest entry against the layer's run in the shards.
fn check_layer(path: &Path, l: usize, entry: &Value, index: &TensorIndex) -> Result<PackedLayer> {
    let field = |k: &str| {
        entry
            .get(k)
            .and_then(Value::as_u64)
            .ok_or_else(|| bad(path, format!("layer {l}: `{k}` missing or not an integer")))
    };
    if entry.get("blocks").is_some() {
        return Err(bad(path, format!("layer {l} uses a trunk codec (`blocks`) this engine does not implement")));
    }
    let coding = check_coding(path, l, entry)?;
    if field("layer")? != l as u64 {
        return Err(bad(path, format!("entry {l} is for layer {}", field("layer")?)));
    }
    let run = layer_run(index, l)?;
    let shard_name = index.shard_paths()[run.shard_idx].file_name().map(|n| n.to_string_lossy().into_owned());
    let (file_off, run_start) = (field("file_off")?, field("run_start")?);
    let run_len = entry.get("run_len").and_then(Value::as_u64).unwrap_or(run.run_len);
    let disagree = |what: String| bad(path, format!("layer {l}: {what} disagrees with the shards (re-run `k3 pack`)"));
    if entry.get("shard").and_then(Value::as_str).map(str::to_string) != shard_name {
        return Err(disagree("`shard`".into()));
    }
    let stored = coding.map_or(run.run_len, |c| c.stored_len);
    if run_start != run.run_start || run_len != run.run_len || field("nbytes")? < stored {
        return Err(disagree("the run position or length".into()));
    }
    if file_off % TRUNK_ALIGN != 0 {
        return Err(bad(path, format!("layer {l}: `file_off` {file_off} is not 4096-aligned")));
    }
    let tensors = entry
        .get("tensors")
        .and_then(Value::as_object)
        .ok_or_else(|| bad(path, format!("layer {l}: `tensors` missing")))?;
    if tensors.len() != run.tensors.len() {
        return Err(disagree(format!("the tensor count ({} vs {})", tensors.len(), run.tensors.len())));
    }
    let mut packed_tensors = Vec::with_capacity(run.tensors.len());
    for t in &run.tensors {
        let m = tensors.get(&t.name).ok_or_else(|| disagree(format!("tensor `{}` (absent)", t.name)))?;
        let shape: Option<Vec<u64>> =
            m.get("shape").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_u64).collect());
        let same = m.get("off").and_then(Value::as_u64) == Some(t.offset - run.run_start)
            && m.get("nbytes").and_then(Value::as_u64) == Some(t.nbytes)
            && m.get("dtype").and_then(Value::as_str) == Some(t.dtype.name())
            && shape.as_deref() == Some(t.shape.as_slice());
        if !same {
            return Err(disagree(format!("tensor `{}`", t.name)));
        }
        if let Some(crc) = m.get("crc32") {
            let crc32 = crc.as_u64().and_then(|c| u32::try_from(c).ok()).ok_or_else(|| {
                bad(path, format!("layer {l}: tensor `{}`: `crc32` is not a 32-bit integer (re-run `k3 pack`)", t.name))
            })?;
            let (off, nbytes, shape) = (t.offset - run.run_start, t.nbytes, t.shape.clone());
            packed_tensors.push(PackedTensor { name: t.name.clone(), off, nbytes, shape, crc32 });
        }
    }
    // All or nothing: a trunk packed before per-tensor checksums has none.
    if packed_tensors.len() != run.tensors.len() {
        packed_tensors.clear();
    }
    let crc32 =
        entry.get("crc32").and_then(Value::as_u64).and_then(|c| u32::try_from(c).ok()).ok_or_else(|| {
            bad(path, format!("layer {l}: `crc32` missing or not a 32-bit integer (re-run `k3 pack`)"))
        })?;
    Ok(PackedLayer { shard_idx: run.shard_idx, run_start, run_len, file_off, crc32, coding, tensors: packed_tensors })
}

/// A coded layer's span (`codec`, `stored_nbytes`, `stored_crc32`), `None` for a raw one.
fn check_coding(path: &Path, l: usize, entry: &Value) -> Result<Option<CodedSpan>> {
    let Some(codec) = entry.get("codec") else { return Ok(None) };
    if codec.as_str() != Some(TrunkCodec::Huffman.name()) {
        return Err(bad(path, format!("layer {l} uses trunk codec {codec}, which this engine does not implement")));
    }
    let aligned_field = |k: &str| {
        entry.get(k).and_then(Value::as_u64).filter(|n| n % TRUNK_ALIGN == 0 && *n > 0).ok_or_else(|| {
            bad(path, format!("layer {l}: `{k}` missing or not a positive multiple of 4096 (re-run `k3 pack`)"))
        })
    };
    let stored_crc32 =
        entry.get("stored_crc32").and_then(Value::as_u64).and_then(|c| u32::try_from(c).ok()).ok_or_else(|| {
            bad(path, format!("layer {l}: `stored_crc32` missing or not a 32-bit integer (re-run `k3 pack`)"))
        })?;
    Ok(Some(CodedSpan { stored_len: aligned_field("stored_nbytes")?, stored_crc32 }))
}

/// Whether `trunk_dir` holds a trunk packed from exactly the shards of `model_dir` (the
/// engine would open it), so packing again can be skipped.
pub fn trunk_is_current(model_dir: &Path, trunk_dir: &Path) -> bool {
    let Ok(cfg) = ModelConfig::load(&model_dir.join("config.json")) else { return false };
    let Ok(index) = TensorIndex::open(model_dir) else { return false };
    crate::stream::trunk_manifest::open_packed_trunk(trunk_dir, &cfg, &index).is_ok()
}
