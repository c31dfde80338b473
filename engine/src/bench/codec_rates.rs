//! `k3 bench codec`: the trunk codec on one real packed layer, against a raw O_DIRECT read
//! of the same layer measured in the same run.
//!
//! Owns: reading layer ℓ's run from a raw `trunk.bin` with the engine's reader (O_DIRECT,
//! its read pattern, best of two), coding it as `k3 pack --codec huffman` would, timing the
//! production decoder (the streamed trunk's `decode_blocks`, its CRC-32 included) on one
//! thread and on every core (best of five: this machine is shared), and what that means
//! for one streamed layer: raw = read the run; coded = read the coded bytes, decoding
//! overlapped on `threads` cores (the larger of the two).
//! Must not: time anything but the production paths (`Reader`, `k3_codec`), or report a
//! decode whose output differs from the raw run.

use std::path::Path;
use std::time::Instant;

use k3_codec::{encode_layer, Directory};

use crate::error::{Error, Result};
use crate::io::{Blob, Checksum, DirectFile, ReadPattern, Reader, Urgency};
use crate::stream::trunk_codec::decode_blocks;

/// What `k3 bench codec` measured.
#[derive(Debug, Clone)]
pub struct CodecRates {
    pub layer_idx: usize,
    pub raw_bytes: u64,
    pub coded_bytes: u64,
    pub blocks: usize,
    pub stored_blocks: usize,
    /// The raw run read with O_DIRECT at the engine's read pattern.
    pub raw_read_gbps: f64,
    pub encode_gbps: f64,
    /// Decoded bytes per second on one thread.
    pub decode_gbps_one_core: f64,
    /// Decoded bytes per second on `threads` threads.
    pub decode_gbps_all: f64,
    pub threads: usize,
    /// The layer streamed raw: its read.
    pub raw_layer_seconds: f64,
    /// The layer streamed coded: reading the coded bytes at the raw read's rate, decode overlapped.
    pub coded_layer_seconds: f64,
}

impl CodecRates {
    pub fn size_ratio(&self) -> f64 {
        self.coded_bytes as f64 / self.raw_bytes.max(1) as f64
    }
}

/// Measures the codec on layer `layer_idx` of the raw packed trunk in `trunk_dir`.
pub fn measure_codec(trunk_dir: &Path, layer_idx: usize, threads: usize) -> Result<CodecRates> {
    let (bin, json) = (trunk_dir.join("trunk.bin"), trunk_dir.join("trunk.json"));
    let bad = |reason: String| Error::Trunk { path: json.clone(), reason };
    let text = std::fs::read(&json).map_err(|e| Error::io(&json, e))?;
    let manifest: serde_json::Value = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    let entry = &manifest["layers"][layer_idx];
    if entry.get("codec").is_some() {
        return Err(bad(format!("layer {layer_idx} is coded: give a trunk packed raw (`k3 pack` without --codec)")));
    }
    let (off, len) = match (entry["file_off"].as_u64(), entry["run_len"].as_u64()) {
        (Some(o), Some(l)) => (o, l as usize),
        _ => return Err(bad(format!("no layer {layer_idx} (file_off, run_len)"))),
    };
    let file = DirectFile::open(&bin)?;
    let reader = Reader::new(ReadPattern::DEFAULT)?;
    let mut blob = Blob::zeroed(len);
    let mut read_secs = f64::MAX;
    for _ in 0..2 {
        let t = Instant::now();
        reader.read_window_into(&file, &mut blob, off, len, Urgency::Now, Checksum::None)?;
        read_secs = read_secs.min(t.elapsed().as_secs_f64());
    }
    let raw = &blob.bytes()[..len];
    let pool = pool_of(threads)?;
    let t = Instant::now();
    let coded = pool.install(|| encode_layer(raw));
    let encode_secs = t.elapsed().as_secs_f64();
    let mut out = vec![0u8; len];
    let one_pool = pool_of(1)?;
    let one =
        best_of(5, || one_pool.install(|| decode_parallel(&coded.bytes, &mut out)).map_err(|e| bad(e.to_string())))?;
    check_same(&out, raw, &bad)?;
    out.fill(0);
    let all = best_of(5, || pool.install(|| decode_parallel(&coded.bytes, &mut out)).map_err(|e| bad(e.to_string())))?;
    check_same(&out, raw, &bad)?;
    let gbps = |secs: f64| len as f64 / secs.max(1e-12) / 1e9;
    let coded_read = read_secs * coded.bytes.len() as f64 / len as f64;
    Ok(CodecRates {
        layer_idx,
        raw_bytes: len as u64,
        coded_bytes: coded.bytes.len() as u64,
        blocks: coded.blocks,
        stored_blocks: coded.stored_blocks,
        raw_read_gbps: gbps(read_secs),
        encode_gbps: gbps(encode_secs),
        decode_gbps_one_core: gbps(one),
        decode_gbps_all: gbps(all),
        threads,
        raw_layer_seconds: read_secs,
        coded_layer_seconds: coded_read.max(all),
    })
}

/// A rayon pool of `threads` threads.
fn pool_of(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Option { option: "threads", reason: e.to_string() })
}

/// `n_values` bf16 values near N(0, 0.02) (what trained and synthetic trunk weights look
/// like), little-endian, from a fixed seed.
pub(crate) fn weight_like_bf16(n_values: usize) -> Vec<u8> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(18);
    (0..n_values)
        .flat_map(|_| {
            let x: f32 = (0..4).map(|_| rng.random::<f32>() - 0.5).sum::<f32>() * 0.034;
            ((x.to_bits() >> 16) as u16).to_le_bytes()
        })
        .collect()
}

/// The fastest of `n` runs of `f`, in seconds.
fn best_of(n: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn check_same(out: &[u8], raw: &[u8], bad: &dyn Fn(String) -> Error) -> Result<()> {
    match out.iter().zip(raw).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(at) => Err(bad(format!("the decoded layer differs from the raw run at byte {at}"))),
    }
}

/// Every block of the coded layer decoded on the current pool by the streamed trunk's
/// `decode_blocks` (its CRC-32 included), as if the layer were one segment.
fn decode_parallel(coded: &[u8], out: &mut [u8]) -> std::result::Result<(), k3_codec::CodecError> {
    let dir = Directory::read(coded, coded.len())?;
    let mut outs: Vec<&mut [u8]> = out.chunks_mut(dir.block_raw).collect();
    let coded_of = |i: usize| {
        let (at, len) = dir.blocks[i];
        &coded[at..at + len]
    };
    decode_blocks(0..dir.blocks.len(), &coded_of, &mut outs).map(|_| ())
}

/// The trunk decoder's rate on `threads` threads, in decoded bytes per second: 64 MiB of
/// bf16 values near N(0, 0.02) (what trained and synthetic trunk weights look like), coded
/// and decoded, best of three (what `k3 forecast` weighs a coded trunk with).
pub fn measure_decode_rate(threads: usize) -> Result<f64> {
    let raw = weight_like_bf16(32 << 20);
    let pool = pool_of(threads.max(1))?;
    let coded = pool.install(|| encode_layer(&raw));
    let mut out = vec![0u8; raw.len()];
    let bad = |e: k3_codec::CodecError| Error::Option { option: "codec", reason: e.to_string() };
    let secs = best_of(3, || pool.install(|| decode_parallel(&coded.bytes, &mut out)).map_err(bad))?;
    Ok(raw.len() as f64 / secs.max(1e-12))
}
