//! The expert checksum table: one CRC32C per routed expert, made once by `k3 pack` and
//! checked by the expert cache on every read (issue 13: nothing unverified is multiplied).
//!
//! Owns: the table file `experts.crc32c.json` beside `trunk.json` (`format`, `sources` —
//! the same shard identity `trunk.json` records —, `n_layers`, and per layer one CRC32C per
//! expert, empty for dense layers), computing it ([`pack_expert_sums`]: an expert of a
//! shard the download kept segment sums for (`k3_io::segment_sums`, while the shard is
//! still the verified file) gets the CRC combined from its tensors' segments, read from
//! nothing; any other is read exactly as the cache reads it — one contiguous window
//! through the shared `io::Reader`, so the CRC is over the same bytes in the same order —
//! resumable per layer through `experts.crc32c-progress.json`), and reading it back strictly
//! ([`open_expert_sums`]: a table for other shard data is refused as stale).
//! Must not: record a CRC for an expert whose tensors are not one contiguous run (the pack
//! refuses it, naming the expert), or accept a table that does not cover every expert.
//! Easy to break: the CRC is over the payload `[start, start + len)` of `expert_dir::locate`,
//! never over the widened O_DIRECT window.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::format::TensorIndex;
use crate::io::direct::widen;
use crate::io::storage::{write_file_synced, WriteStorage};
use crate::io::{Blob, Checksum, DirectFile, ReadPattern, Reader, Urgency};
use crate::stream::expert_dir::{locate, Placement};
use k3_io::segment_sums::SegmentSums;

/// The table's file name, beside `trunk.json`.
pub const EXPERT_TABLE: &str = "experts.crc32c.json";
/// The note of an interrupted table, beside it.
const PROGRESS_FILE: &str = "experts.crc32c-progress.json";
const FORMAT: &str = "k3-desktop expert crc32c v1";

/// One CRC32C per routed expert, `[layer][expert]` (empty for dense layers).
#[derive(Debug, Clone)]
pub struct ExpertSums {
    pub path: PathBuf,
    layers: Vec<Vec<u32>>,
}

impl ExpertSums {
    /// The CRC32C recorded for an expert, if the table has one.
    pub fn get(&self, layer_idx: usize, expert_idx: usize) -> Option<u32> {
        self.layers.get(layer_idx).and_then(|l| l.get(expert_idx)).copied()
    }
}

/// Where one expert's bytes are, for the table: `(shard, start, len)`.
fn contiguous(index: &TensorIndex, layer_idx: usize, expert_idx: usize) -> Result<(usize, u64, usize)> {
    match locate(index, layer_idx, expert_idx)? {
        (Placement::Contiguous { shard_idx, start, len }, _) => Ok((shard_idx, start, len)),
        (Placement::Scattered, _) => Err(Error::Pack {
            layer_idx,
            reason: format!(
                "expert {expert_idx}'s tensors are not one contiguous run in one shard, so no CRC32C can cover \
                 what the expert cache reads"
            ),
        }),
    }
}

/// Experts per layer: `n_experts` for MoE layers, 0 for dense ones.
fn experts_in(cfg: &ModelConfig, layer_idx: usize) -> usize {
    if cfg.is_dense(layer_idx) {
        0
    } else {
        cfg.moe.n_experts
    }
}

/// Bytes the table reads: every routed expert once.
pub fn expert_bytes_total(cfg: &ModelConfig, index: &TensorIndex) -> Result<u64> {
    let mut total = 0;
    for l in 0..cfg.n_layers {
        for e in 0..experts_in(cfg, l) {
            total += locate(index, l, e)?.1;
        }
    }
    Ok(total)
}

/// Progress of the table: `(layer_idx, bytes)` after each expert.
pub type SumsProgress<'a> = &'a mut dyn FnMut(usize, u64);

/// The table being made: where it goes, and how many experts' CRCs came from the
/// download's segment sums rather than a read.
pub struct SumsMade {
    /// `out_dir/experts.crc32c.json.partial`; the caller renames it into place.
    pub partial: PathBuf,
    pub from_download: usize,
    pub read: usize,
}

/// Computes the table of the checkpoint into `out_dir/experts.crc32c.json.partial`
/// (resuming after the last layer an interrupted run finished when its note names the same
/// `sources`).
pub fn pack_expert_sums(
    cfg: &ModelConfig,
    index: &TensorIndex,
    out_dir: &Path,
    sources: &[Value],
    storage: &dyn WriteStorage,
    progress: SumsProgress,
) -> Result<SumsMade> {
    let note = out_dir.join(PROGRESS_FILE);
    let mut layers = resumable(&note, sources, cfg);
    for (l, done) in layers.iter().enumerate() {
        let bytes: u64 = (0..done.len()).map(|e| locate(index, l, e).map(|x| x.1)).sum::<Result<u64>>()?;
        progress(l, bytes);
    }
    let downloaded: Vec<Option<SegmentSums>> =
        index.shard_paths().iter().map(|p| SegmentSums::load(index.dir(), p)).collect();
    let files = index.shard_paths().iter().map(|p| DirectFile::open(p)).collect::<k3_io::Result<Vec<_>>>()?;
    let reader = Reader::new(ReadPattern::DEFAULT)?;
    let mut blobs: Vec<Blob> = (0..IN_FLIGHT).map(|_| Blob::zeroed(0)).collect();
    let (mut from_download, mut read) = (0, 0);
    for l in layers.len()..cfg.n_layers {
        let places = (0..experts_in(cfg, l)).map(|e| contiguous(index, l, e)).collect::<Result<Vec<_>>>()?;
        let known = |&(shard, start, len): &(usize, u64, usize)| {
            downloaded[shard].as_ref().and_then(|s| s.range_crc(start, start + len as u64))
        };
        let mut sums: Vec<Option<u32>> = places.iter().map(known).collect();
        for (&(_, _, len), _) in places.iter().zip(&sums).filter(|(_, s)| s.is_some()) {
            progress(l, len as u64);
            from_download += 1;
        }
        let unknown: Vec<usize> = (0..places.len()).filter(|&e| sums[e].is_none()).collect();
        for batch in unknown.chunks(IN_FLIGHT) {
            let batch_places: Vec<_> = batch.iter().map(|&e| places[e]).collect();
            for (crc, &e) in read_batch(&reader, &files, &batch_places, &mut blobs)?.into_iter().zip(batch) {
                sums[e] = Some(crc);
                progress(l, places[e].2 as u64);
                read += 1;
            }
        }
        layers.push(sums.into_iter().flatten().collect());
        let done = json!({ "format": FORMAT, "sources": sources, "layers": layers });
        write_synced(storage, &note, done.to_string().as_bytes())?;
    }
    let table = json!({ "format": FORMAT, "sources": sources, "n_layers": cfg.n_layers, "layers": layers });
    let partial = out_dir.join(format!("{EXPERT_TABLE}.partial"));
    write_synced(storage, &partial, table.to_string().as_bytes())?;
    Ok(SumsMade { partial, from_download, read })
}

/// Experts read at once while packing (each with its own buffer: memory stays bounded).
const IN_FLIGHT: usize = 4;

/// Reads up to `IN_FLIGHT` experts `(shard, start, len)` together, one per buffer, each as
/// the cache reads it; returns their CRC32Cs in order.
fn read_batch(
    reader: &Reader,
    files: &[DirectFile],
    batch: &[(usize, u64, usize)],
    blobs: &mut [Blob],
) -> Result<Vec<u32>> {
    std::thread::scope(|s| {
        let jobs: Vec<_> = batch
            .iter()
            .zip(blobs.iter_mut())
            .map(|(&(shard_idx, start, len), blob)| {
                s.spawn(move || {
                    if blob.capacity() < widen(start, len).1 {
                        *blob = Blob::zeroed(widen(start, len).1);
                    }
                    let file = &files[shard_idx];
                    reader
                        .read_window_into(file, blob, start, len, Urgency::Now, Checksum::Crc32c)
                        .map(|r| r.checksum)
                        .map_err(Error::from)
                })
            })
            .collect();
        let panicked = || Error::Pack { layer_idx: 0, reason: "an expert reader thread panicked".into() };
        jobs.into_iter().map(|j| j.join().unwrap_or_else(|_| Err(panicked()))).collect()
    })
}

/// Removes the note of an interrupted table (after the table is in place).
pub fn remove_progress(storage: &dyn WriteStorage, out_dir: &Path) {
    let _ = storage.remove_file(&out_dir.join(PROGRESS_FILE));
}

/// The layers an interrupted run finished, when its note is for the same shards.
fn resumable(note: &Path, sources: &[Value], cfg: &ModelConfig) -> Vec<Vec<u32>> {
    let Ok(text) = std::fs::read(note) else { return Vec::new() };
    let Ok(v) = serde_json::from_slice::<Value>(&text) else { return Vec::new() };
    if v["format"] != FORMAT || v["sources"].as_array().map(|s| s.as_slice()) != Some(sources) {
        return Vec::new();
    }
    parse_layers(&v["layers"], cfg, true).unwrap_or_default()
}

/// `layers` as CRCs, each layer the right length; `partial` allows fewer layers.
fn parse_layers(v: &Value, cfg: &ModelConfig, partial: bool) -> Option<Vec<Vec<u32>>> {
    let layers = v.as_array()?;
    if layers.len() > cfg.n_layers || (!partial && layers.len() != cfg.n_layers) {
        return None;
    }
    let mut out = Vec::with_capacity(layers.len());
    for (l, layer) in layers.iter().enumerate() {
        let sums = layer.as_array()?;
        if sums.len() != experts_in(cfg, l) {
            return None;
        }
        out.push(sums.iter().map(|c| c.as_u64().and_then(|c| u32::try_from(c).ok())).collect::<Option<Vec<_>>>()?);
    }
    Some(out)
}

/// Opens `dir/experts.crc32c.json`, refusing a missing, malformed or stale table.
pub fn open_expert_sums(dir: &Path, cfg: &ModelConfig, index: &TensorIndex) -> Result<Arc<ExpertSums>> {
    let path = dir.join(EXPERT_TABLE);
    let bad = |reason: String| Error::Trunk { path: path.clone(), reason };
    if !path.is_file() {
        return Err(bad(
            "no expert checksum table: this trunk was packed by an older k3, and no expert is multiplied \
             unverified (re-run `k3 pack`)"
                .into(),
        ));
    }
    let raw = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let root = crate::json::parse_object(&raw).map_err(bad)?;
    if root.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(bad(format!("`format` is not \"{FORMAT}\" (re-run `k3 pack`)")));
    }
    crate::stream::trunk_layout::check_sources(&path, root.get("sources"), index, &crate::stream::trunk_layout::Disk)?;
    let layers = root.get("layers").and_then(|v| parse_layers(v, cfg, false)).ok_or_else(|| {
        bad("`layers` must hold one 32-bit CRC32C per routed expert of every layer (re-run `k3 pack`)".into())
    })?;
    Ok(Arc::new(ExpertSums { path, layers }))
}

fn write_synced(storage: &dyn WriteStorage, path: &Path, bytes: &[u8]) -> Result<()> {
    write_file_synced(storage, path, bytes).map_err(|e| Error::io(path, e))
}
