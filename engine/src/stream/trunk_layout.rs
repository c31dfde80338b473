//! How a packed trunk is laid out and tied to its shards: the records of `trunk.json`
//! ([`PackedLayer`], [`PackedTensor`], [`CodedSpan`]), where a layer's trunk run lies in its
//! shard ([`layer_run`]), the file's alignment and format name, and the shards' identity
//! that makes a trunk stale when they change ([`check_sources`]). A leaf: the packer, the
//! manifest reader, the codec and the expert table all build on it and none on another
//! for these.
//!
//! Owns: [`LayerRun`], [`PackedLayer`], [`PackedTensor`], [`CodedSpan`], [`TrunkFiles`],
//! [`TRUNK_ALIGN`], [`TRUNK_FORMAT`].

use std::path::Path;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::format::{TensorIndex, TensorInfo};
use crate::model::names;

/// Alignment of every layer in `trunk.bin`.
pub const TRUNK_ALIGN: u64 = 4096;
/// The `format` of the `trunk.json` this engine writes (the reference packer writes none).
pub const TRUNK_FORMAT: &str = "k3-desktop trunk v1";

/// One layer of a packed trunk, checked against the shards.
#[derive(Debug, Clone)]
pub struct PackedLayer {
    pub shard_idx: usize,
    pub run_start: u64,
    pub run_len: u64,
    pub file_off: u64,
    /// CRC-32 of the run, checked after every read (of the decoded bytes, when coded).
    pub crc32: u32,
    /// Where the layer is coded (`k3 pack --codec huffman`), its coded span.
    pub coding: Option<CodedSpan>,
    /// Each tensor's place in the run and CRC-32, in the run's order; empty when the trunk
    /// was packed before tensors had checksums (the layer then streams only whole).
    pub tensors: Vec<PackedTensor>,
}

/// One tensor of a packed layer: what a piece read needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedTensor {
    pub name: String,
    /// Offset in the layer's run.
    pub off: u64,
    pub nbytes: u64,
    pub shape: Vec<u64>,
    pub crc32: u32,
}

impl PackedLayer {
    /// The bytes of `trunk.bin` this layer's read covers.
    pub fn stored_len(&self) -> u64 {
        self.coding.map_or(self.run_len, |c| c.stored_len)
    }

    /// The buffer that holds this layer once read (and decoded).
    pub fn buffer_len(&self) -> usize {
        crate::io::direct::widen(self.file_off, self.run_len as usize).1
    }

    /// True when the layer can be read a tensor at a time: stored raw, with a checksum
    /// per tensor.
    pub fn has_pieces(&self) -> bool {
        self.coding.is_none() && !self.tensors.is_empty()
    }

    /// The buffer that holds tensor `t` of this layer once read on its own.
    pub fn tensor_buffer_len(&self, t: &PackedTensor) -> usize {
        crate::io::direct::widen(self.file_off + t.off, t.nbytes as usize).1
    }
}

/// Where a coded layer lies in `trunk.bin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodedSpan {
    /// Coded bytes at the layer's `file_off` (a multiple of 4096).
    pub stored_len: u64,
    /// CRC-32 of those `stored_len` bytes (`stored_crc32`): a layer held coded in RAM is
    /// checked by it when it is loaded, before any decode.
    pub stored_crc32: u32,
}

/// One layer's run in its shard.
pub struct LayerRun<'a> {
    pub shard_idx: usize,
    pub run_start: u64,
    pub run_len: u64,
    pub tensors: Vec<&'a TensorInfo>,
}

/// The manifest at `path` is refused for `reason`.
fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::Trunk { path: path.to_path_buf(), reason: reason.into() }
}

fn pack_error(layer_idx: usize, reason: String) -> Error {
    Error::Pack { layer_idx, reason }
}

/// The trunk tensors of `layer_idx` as one contiguous run, or why they are not.
pub fn layer_run<'a>(index: &'a TensorIndex, layer_idx: usize) -> Result<LayerRun<'a>> {
    let prefix = names::layer(layer_idx, "");
    let experts = names::experts_prefix(layer_idx);
    let mut tensors: Vec<&TensorInfo> =
        index.tensors().filter(|t| t.name.starts_with(&prefix) && !t.name.starts_with(&experts)).collect();
    if tensors.is_empty() {
        return Err(pack_error(layer_idx, "no trunk tensors".into()));
    }
    tensors.sort_by_key(|t| (t.shard_idx, t.offset));
    let (first, last) = (tensors[0], tensors[tensors.len() - 1]);
    if first.shard_idx != last.shard_idx {
        let shards = index.shard_paths();
        return Err(pack_error(
            layer_idx,
            format!(
                "its trunk spans two shards ({} and {})",
                shards[first.shard_idx].display(),
                shards[last.shard_idx].display()
            ),
        ));
    }
    for w in tensors.windows(2) {
        if w[0].offset + w[0].nbytes != w[1].offset {
            return Err(pack_error(
                layer_idx,
                format!(
                    "its trunk is not contiguous: `{}` ends at {} but `{}` starts at {}",
                    w[0].name,
                    w[0].offset + w[0].nbytes,
                    w[1].name,
                    w[1].offset
                ),
            ));
        }
    }
    let run_len = last.offset + last.nbytes - first.offset;
    Ok(LayerRun { shard_idx: first.shard_idx, run_start: first.offset, run_len, tensors })
}

/// What binds a trunk to the shards it was packed from: each shard's name, size and
/// modification time (nanoseconds since the epoch). Rewriting a shard, even with the same
/// headers and size, changes its time, and the trunk is then refused as stale.
pub(crate) fn source_identity(path: &Path) -> Result<serde_json::Value> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let modified = meta.modified().map_err(|e| Error::io(path, e))?;
    let modified_ns = modified.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(json!({ "shard": name, "bytes": meta.len(), "modified_ns": modified_ns }))
}

/// What the manifest check asks of the file system.
pub trait TrunkFiles {
    /// What `k3 pack` records of a shard in `sources` (name, size, modification time).
    fn source_identity(&self, shard: &Path) -> Result<Value>;
    /// The length of `trunk.bin`.
    fn bin_len(&self, bin_path: &Path) -> Result<u64>;
}

/// The real file system.
pub(crate) struct Disk;

impl TrunkFiles for Disk {
    fn source_identity(&self, shard: &Path) -> Result<Value> {
        source_identity(shard)
    }

    fn bin_len(&self, bin_path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(bin_path).map_err(|e| Error::io(bin_path, e))?.len())
    }
}

/// Refuses a trunk packed from other shards than the ones here: every shard's name, size
/// and modification time must equal what `k3 pack` recorded.
pub(crate) fn check_sources(
    path: &Path,
    sources: Option<&Value>,
    index: &TensorIndex,
    files: &dyn TrunkFiles,
) -> Result<()> {
    let recorded = sources.and_then(Value::as_array).ok_or_else(|| {
        bad(path, "`sources` missing: this trunk cannot be tied to the shards it was packed from (re-run `k3 pack`)")
    })?;
    let shards = index.shard_paths();
    if recorded.len() != shards.len() {
        return Err(bad(
            path,
            format!("packed from {} shards, the checkpoint has {} (re-run `k3 pack`)", recorded.len(), shards.len()),
        ));
    }
    for (want, shard) in recorded.iter().zip(shards) {
        let now = files.source_identity(shard)?;
        if want != &now {
            return Err(bad(
                path,
                format!(
                    "stale: {} changed since the trunk was packed (recorded {want}, now {now}); re-run `k3 pack`",
                    shard.display()
                ),
            ));
        }
    }
    Ok(())
}
