//! `k3 pack`: copies every layer's trunk run out of the shards into one aligned
//! `trunk.bin`, described by `trunk.json` (spec §8).
//!
//! Owns: finding each layer's trunk tensors (every `layers.ℓ.` tensor but the routed
//! experts), refusing a layer that is not one contiguous run in one shard (the reason is
//! named), copying runs in 64 MiB chunks at 4096-aligned offsets with a CRC-32 per layer
//! and one per tensor (what a layer streamed in pieces checks each piece by), verifying the written file, then the expert checksum table (`stream::expert_sums`: one
//! CRC32C per routed expert, every expert read once), and publishing atomically.
//! Must not: leave a file the engine would accept after an interruption: the pack is
//! written under `*.partial` names, an older `trunk.json` is removed first, and
//! `trunk.json` is renamed into place last, after `trunk.bin` and `experts.crc32c.json`,
//! all fsynced. An interrupted expert table resumes after its last finished layer. An
//! interrupted pack resumes after its last durable layer (`trunk.pack-progress.json`,
//! written after the layer's `fdatasync`) only when the shards are unchanged.
//! Every write, sync, rename and removal goes through an `io::storage::WriteStorage`
//! ([`pack_trunk_with`]; [`pack_trunk`] uses the real file system), so tests fail the N-th
//! operation or cut the power there and check that what is left is refused.
//! With `--codec huffman` each layer is coded (`stream::trunk_codec`) and stored coded
//! where that is smaller: its entry adds `codec`, `stored_nbytes` (the coded bytes at
//! `file_off`) and `stored_crc32`
//! (of the coded bytes, for the read-back check); `crc32` stays the run's.
//! Easy to break: `nbytes` in the manifest is the space the layer takes in `trunk.bin` (the
//! run length, or a coded layer's stored length, rounded UP to 4096); the exact run length
//! is `run_len`.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::format::TensorIndex;
use crate::io::storage::{
    read_exact_at, write_all_at, write_file_synced, OpenMode, OsStorage, StoredFile, WriteStorage,
};
use crate::stream::expert_sums::{expert_bytes_total, pack_expert_sums, remove_progress, EXPERT_TABLE};
use crate::stream::trunk_codec::{code_run, TrunkCodec};
use crate::stream::trunk_layout::source_identity;
pub use crate::stream::trunk_layout::{layer_run, LayerRun, TRUNK_ALIGN, TRUNK_FORMAT};

/// Copy chunk size.
const CHUNK: usize = 64 << 20;
// Which part of the pack is running, and its progress: defined in k3-io, where the store's
// install pipeline reads them too.
pub use k3_io::pack::{PackProgress, PackStage};

/// What a finished pack wrote.
#[derive(Debug, Clone)]
pub struct PackSummary {
    pub trunk_bin: PathBuf,
    pub trunk_json: PathBuf,
    pub payload_bytes: u64,
    pub file_bytes: u64,
    /// The expert checksum table and the routed experts' bytes it covers.
    pub expert_table: PathBuf,
    pub expert_bytes: u64,
    /// Experts whose CRC32C came from the download's segment sums (nothing read), and
    /// experts read to compute it.
    pub experts_from_download: usize,
    pub experts_read: usize,
    /// Layers taken from an interrupted pack instead of copied again.
    pub resumed_layers: usize,
}

fn pack_error(layer_idx: usize, reason: String) -> Error {
    Error::Pack { layer_idx, reason }
}

/// Packs the trunk of the model in `model_dir` into `out_dir/trunk.{bin,json}`. A pack
/// interrupted earlier resumes after the last layer it made durable, when the shards are
/// still the ones it was reading.
pub fn pack_trunk(model_dir: &Path, out_dir: &Path, progress: &mut dyn FnMut(PackProgress)) -> Result<PackSummary> {
    pack_trunk_with(model_dir, (out_dir, TrunkCodec::Raw), &OsStorage, progress)
}

/// [`pack_trunk`] with the layers stored as `codec` says (`k3 pack --codec`).
pub fn pack_trunk_coded(
    model_dir: &Path,
    out_dir: &Path,
    codec: TrunkCodec,
    progress: &mut dyn FnMut(PackProgress),
) -> Result<PackSummary> {
    pack_trunk_with(model_dir, (out_dir, codec), &OsStorage, progress)
}

/// [`pack_trunk_coded`] writing through `storage` (tests inject write faults and power cuts).
pub fn pack_trunk_with(
    model_dir: &Path,
    (out_dir, codec): (&Path, TrunkCodec),
    storage: &dyn WriteStorage,
    progress: &mut dyn FnMut(PackProgress),
) -> Result<PackSummary> {
    let cfg = ModelConfig::load(&model_dir.join("config.json"))?;
    let index = TensorIndex::open(model_dir)?;
    let runs = (0..cfg.n_layers).map(|l| layer_run(&index, l)).collect::<Result<Vec<_>>>()?;
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let (bin, json_path) = (out_dir.join("trunk.bin"), out_dir.join("trunk.json"));
    let table = out_dir.join(EXPERT_TABLE);
    for stale in [&json_path, &table, &bin] {
        match storage.remove_file(stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(stale, e)),
            _ => {}
        }
    }
    let (bin_tmp, json_tmp) = (out_dir.join("trunk.bin.partial"), out_dir.join("trunk.json.partial"));
    let progress_path = out_dir.join(PROGRESS_FILE);
    let sources = index.shard_paths().iter().map(|p| source_identity(p)).collect::<Result<Vec<_>>>()?;
    let mut layers = resumable_layers(&progress_path, (&bin_tmp, codec), &sources, &runs, &index);
    let out = storage
        .open(&bin_tmp, OpenMode::ReadWrite { truncate: layers.is_empty() })
        .map_err(|e| Error::io(&bin_tmp, e))?;
    let resumed_layers = layers.len();
    let trunk_bytes: u64 = runs.iter().map(|r| r.run_len).sum();
    let expert_bytes = expert_bytes_total(&cfg, &index)?;
    let bytes_total = trunk_bytes + expert_bytes;
    let mut bytes_done: u64 = runs.iter().take(resumed_layers).map(|r| r.run_len).sum();
    let mut file_off = layers.iter().map(|l| l["nbytes"].as_u64().unwrap_or(0)).sum::<u64>();
    // A coded pack reads each run whole; the buffer is reused (fresh pages cost a fault each).
    let mut run_buf = Vec::new();
    for (layer_idx, run) in runs.iter().enumerate().skip(resumed_layers) {
        let shard_path = &index.shard_paths()[run.shard_idx];
        let shard = File::open(shard_path).map_err(|e| Error::io(shard_path, e))?;
        let mut done = |n| {
            bytes_done += n;
            progress(PackProgress {
                stage: PackStage::Trunk,
                layer_idx,
                n_layers: runs.len(),
                bytes_done,
                bytes_total,
            });
        };
        let (target, source) = ((&*out, bin_tmp.as_path(), file_off), (&shard, shard_path.as_path()));
        let (entry, nbytes) = match codec {
            TrunkCodec::Raw => {
                let crcs = copy_run(source.0, source.1, run, target.0, target.1, file_off, &mut done)?;
                (
                    manifest_entry(layer_idx, run, shard_path, (file_off, aligned(run.run_len)), &crcs),
                    aligned(run.run_len),
                )
            }
            TrunkCodec::Huffman => pack_coded_run((layer_idx, run, &mut run_buf), source, target, &mut done)?,
        };
        layers.push(entry);
        file_off += nbytes;
        // The layer's bytes are durable before the progress file says so.
        out.sync_data().map_err(|e| Error::io(&bin_tmp, e))?;
        let note = json!({ "format": PROGRESS_FORMAT, "codec": codec.name(), "sources": sources, "layers": layers });
        write_synced(storage, &progress_path, note.to_string().as_bytes())?;
    }
    out.set_len(file_off).map_err(|e| Error::io(&bin_tmp, e))?;
    out.sync_all().map_err(|e| Error::io(&bin_tmp, e))?;
    if let Err(e) = verify(&*out, &bin_tmp, &layers) {
        // Never resume from bytes that did not read back.
        let _ = storage.remove_file(&progress_path);
        return Err(e);
    }
    let made = pack_expert_sums(&cfg, &index, out_dir, &sources, storage, &mut |layer_idx, n| {
        bytes_done += n;
        let stage = PackStage::ExpertSums;
        progress(PackProgress { stage, layer_idx, n_layers: runs.len(), bytes_done, bytes_total });
    })?;
    let manifest = json!({
        "n_layers": runs.len(),
        "align": TRUNK_ALIGN,
        "format": TRUNK_FORMAT,
        "codec": codec.name(),
        "sources": sources,
        "layers": layers,
    });
    write_synced(storage, &json_tmp, manifest.to_string().as_bytes())?;
    storage.rename(&bin_tmp, &bin).map_err(|e| Error::io(&bin, e))?;
    storage.rename(&made.partial, &table).map_err(|e| Error::io(&table, e))?;
    storage.rename(&json_tmp, &json_path).map_err(|e| Error::io(&json_path, e))?;
    storage.sync_dir(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let _ = storage.remove_file(&progress_path);
    remove_progress(storage, out_dir);
    Ok(PackSummary {
        trunk_bin: bin,
        trunk_json: json_path,
        payload_bytes: trunk_bytes,
        file_bytes: file_off,
        expert_table: table,
        expert_bytes,
        experts_from_download: made.from_download,
        experts_read: made.read,
        resumed_layers,
    })
}

/// The progress note of an interrupted pack, beside `trunk.bin.partial`.
const PROGRESS_FILE: &str = "trunk.pack-progress.json";
const PROGRESS_FORMAT: &str = "k3-desktop trunk pack progress v1";

fn aligned(len: u64) -> u64 {
    len.div_ceil(TRUNK_ALIGN) * TRUNK_ALIGN
}

/// The manifest entries of the layers an interrupted pack finished, when its note names
/// the same shards (name, size, time) and each entry is the one this pack would write;
/// empty otherwise (the pack starts over). The final read-back check covers their bytes.
fn resumable_layers(
    note: &Path,
    (bin_tmp, codec): (&Path, TrunkCodec),
    sources: &[Value],
    runs: &[LayerRun],
    index: &TensorIndex,
) -> Vec<Value> {
    let Ok(text) = std::fs::read(note) else { return Vec::new() };
    let Ok(v) = serde_json::from_slice::<Value>(&text) else { return Vec::new() };
    if v["format"] != PROGRESS_FORMAT
        || v["sources"].as_array().map(|s| s.as_slice()) != Some(sources)
        || v["codec"].as_str().unwrap_or("raw") != codec.name()
    {
        return Vec::new();
    }
    let Some(done) = v["layers"].as_array() else { return Vec::new() };
    let mut file_off = 0u64;
    for (layer_idx, (entry, run)) in done.iter().zip(runs).enumerate() {
        let crcs = RunCrcs::recorded(entry, run);
        let coded = entry.get("codec").is_some();
        let nbytes = if coded { entry["stored_nbytes"].as_u64().unwrap_or(0) } else { aligned(run.run_len) };
        let shard = &index.shard_paths()[run.shard_idx];
        let mut expected = manifest_entry(layer_idx, run, shard, (file_off, nbytes), &crcs);
        if coded {
            for key in CODING_KEYS {
                expected[key] = entry[key].clone();
            }
        }
        if *entry != expected {
            return Vec::new();
        }
        file_off += nbytes;
    }
    let on_disk = std::fs::metadata(bin_tmp).map(|m| m.len()).unwrap_or(0);
    if done.len() > runs.len() || on_disk < file_off {
        return Vec::new();
    }
    done.clone()
}

/// A run's CRC-32 and each of its tensors' (in the run's order).
struct RunCrcs {
    run: u32,
    tensors: Vec<u32>,
}

impl RunCrcs {
    /// The checksums of `raw`, a whole run.
    fn of(raw: &[u8], run: &LayerRun) -> Self {
        let mut sums = RunHasher::new(run);
        sums.update(raw);
        sums.finish()
    }

    /// What an earlier pack's `entry` recorded (zeros where it recorded nothing, so the
    /// entry then differs from the one this pack writes).
    fn recorded(entry: &Value, run: &LayerRun) -> Self {
        let crc = |v: &Value| v.as_u64().and_then(|c| u32::try_from(c).ok()).unwrap_or(0);
        let tensors = run.tensors.iter().map(|t| crc(&entry["tensors"][&t.name]["crc32"])).collect();
        RunCrcs { run: crc(&entry["crc32"]), tensors }
    }
}

/// Hashes a run fed in order, splitting the bytes at tensor boundaries (the run's tensors
/// are contiguous: [`layer_run`] refuses gaps).
struct RunHasher {
    run: crc32fast::Hasher,
    ends: Vec<u64>,
    tensor: crc32fast::Hasher,
    done: Vec<u32>,
    pos: u64,
}

impl RunHasher {
    fn new(run: &LayerRun) -> Self {
        let ends = run.tensors.iter().map(|t| t.offset + t.nbytes - run.run_start).collect();
        RunHasher { run: crc32fast::Hasher::new(), ends, tensor: crc32fast::Hasher::new(), done: Vec::new(), pos: 0 }
    }

    fn update(&mut self, mut bytes: &[u8]) {
        self.run.update(bytes);
        while !bytes.is_empty() {
            let end = self.ends.get(self.done.len()).copied().unwrap_or(u64::MAX);
            let n = ((end - self.pos) as usize).min(bytes.len());
            self.tensor.update(&bytes[..n]);
            self.pos += n as u64;
            bytes = &bytes[n..];
            if self.pos == end {
                let finished = std::mem::replace(&mut self.tensor, crc32fast::Hasher::new());
                self.done.push(finished.finalize());
            }
        }
    }

    fn finish(self) -> RunCrcs {
        RunCrcs { run: self.run.finalize(), tensors: self.done }
    }
}

/// Copies one run to `file_off` in 64 MiB chunks; returns its CRC-32s.
fn copy_run(
    shard: &File,
    shard_path: &Path,
    run: &LayerRun,
    out: &dyn StoredFile,
    out_path: &Path,
    file_off: u64,
    done: &mut dyn FnMut(u64),
) -> Result<RunCrcs> {
    let mut hasher = RunHasher::new(run);
    let mut buf = vec![0u8; CHUNK.min(run.run_len as usize)];
    let mut copied = 0u64;
    while copied < run.run_len {
        let n = (run.run_len - copied).min(buf.len() as u64) as usize;
        crate::io::os::read_exact_at(shard, &mut buf[..n], run.run_start + copied)
            .map_err(|e| Error::io(shard_path, e))?;
        write_all_at(out, &buf[..n], file_off + copied).map_err(|e| Error::io(out_path, e))?;
        hasher.update(&buf[..n]);
        copied += n as u64;
        done(n as u64);
    }
    Ok(hasher.finish())
}

fn manifest_entry(
    layer_idx: usize,
    run: &LayerRun,
    shard_path: &Path,
    (file_off, nbytes): (u64, u64),
    crcs: &RunCrcs,
) -> Value {
    let mut tensors = Map::new();
    for (t, crc) in run.tensors.iter().zip(&crcs.tensors) {
        tensors.insert(
            t.name.clone(),
            json!({
                "off": t.offset - run.run_start, "nbytes": t.nbytes, "dtype": t.dtype.name(), "shape": t.shape,
                "crc32": crc,
            }),
        );
    }
    let crc = crcs.run;
    let shard = shard_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    json!({
        "layer": layer_idx, "shard": shard, "run_start": run.run_start, "nbytes": nbytes,
        "file_off": file_off, "run_len": run.run_len, "crc32": crc, "tensors": tensors,
    })
}

/// Re-reads every packed layer and checks its CRC-32 (a coded layer's: of its coded bytes).
fn verify(out: &dyn StoredFile, path: &Path, layers: &[Value]) -> Result<()> {
    let mut buf = vec![0u8; CHUNK];
    for l in layers {
        let coded = l.get("codec").is_some();
        let (len_key, crc_key) = if coded { ("stored_nbytes", "stored_crc32") } else { ("run_len", "crc32") };
        let (off, len) = (l["file_off"].as_u64().unwrap_or(0), l[len_key].as_u64().unwrap_or(0));
        let mut hasher = crc32fast::Hasher::new();
        let mut done = 0;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            read_exact_at(out, &mut buf[..n], off + done).map_err(|e| Error::io(path, e))?;
            hasher.update(&buf[..n]);
            done += n as u64;
        }
        if Some(u64::from(hasher.finalize())) != l[crc_key].as_u64() {
            let layer_idx = l["layer"].as_u64().unwrap_or(0) as usize;
            return Err(pack_error(layer_idx, format!("{} does not read back what was written", path.display())));
        }
    }
    Ok(())
}

/// The manifest keys of a coded layer, beside a raw layer's.
const CODING_KEYS: [&str; 3] = ["codec", "stored_nbytes", "stored_crc32"];

/// Reads layer `run` whole, codes it and writes what is smaller (coded, or raw when coding
/// would not shrink it) at `file_off`; returns its manifest entry and the bytes it takes.
fn pack_coded_run(
    (layer_idx, run, raw): (usize, &LayerRun, &mut Vec<u8>),
    (shard, shard_path): (&File, &Path),
    (out, out_path, file_off): (&dyn StoredFile, &Path, u64),
    done: &mut dyn FnMut(u64),
) -> Result<(Value, u64)> {
    raw.resize(run.run_len as usize, 0);
    for (i, chunk) in raw.chunks_mut(CHUNK).enumerate() {
        crate::io::os::read_exact_at(shard, chunk, run.run_start + (i * CHUNK) as u64)
            .map_err(|e| Error::io(shard_path, e))?;
        done(chunk.len() as u64);
    }
    let crcs = RunCrcs::of(raw, run);
    let Some((coded, span)) = code_run(raw) else {
        write_all_at(out, raw, file_off).map_err(|e| Error::io(out_path, e))?;
        let nbytes = aligned(run.run_len);
        return Ok((manifest_entry(layer_idx, run, shard_path, (file_off, nbytes), &crcs), nbytes));
    };
    write_all_at(out, &coded, file_off).map_err(|e| Error::io(out_path, e))?;
    let mut entry = manifest_entry(layer_idx, run, shard_path, (file_off, span.stored_len), &crcs);
    entry["codec"] = json!(TrunkCodec::Huffman.name());
    entry["stored_nbytes"] = json!(span.stored_len);
    entry["stored_crc32"] = json!(span.stored_crc32);
    Ok((entry, span.stored_len))
}

fn write_synced(storage: &dyn WriteStorage, path: &Path, bytes: &[u8]) -> Result<()> {
    write_file_synced(storage, path, bytes).map_err(|e| Error::io(path, e))
}
