//! The trunk codec as `k3 pack` and the streamed trunk use it (`k3_codec` does the coding).
//!
//! Owns: [`TrunkCodec`] (what `k3 pack --codec` accepts and `trunk.json` records), coding one
//! layer's run for the pack ([`code_run`]: kept raw when coding would not make it smaller),
//! and reading a coded layer ([`read_coded_layer`]): its directory first, then its blocks in
//! segments of at most [`SEGMENT_BYTES`], up to [`STAGING_SEGMENTS`] of them read at once
//! into reused staging buffers while the segments that have arrived are decoded, in order,
//! into the layer's buffer (each segment's blocks on the calling pool's threads) — so
//! decoding overlaps the read instead of following it. The CRC-32 of the decoded run is
//! computed block by block as each block is written (`k3_codec::decode_block_summed`), and
//! combined in order.
//! Must not: hand back bytes whose decode failed — a malformed directory or block is
//! `Error::Trunk` naming `trunk.bin`, the layer and the block; a failed read or a stop is
//! the read's error.
//! Also owns a layer held coded in RAM ([`HeldCoded`]): loaded in one read
//! ([`load_coded_layer`]), decoded whole into a ring buffer each time it is used
//! ([`decode_held`]).
//! Memory: the staging buffers ([`STAGING_SEGMENTS`] × [`SEGMENT_BYTES`]) live as long as
//! the streamed trunk, beside the ring slots, whose size stays the raw layer's.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{mpsc, Mutex};

use rayon::prelude::*;

use k3_codec::block::Scratch;
use k3_codec::{decode_block_summed, encode_layer, Directory};

use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::io::{Blob, Checksum, DirectFile, Reader, Urgency};
use crate::stream::trunk_layout::{CodedSpan, PackedLayer};

/// Coded bytes per staging segment (whole blocks; each block starts 4096-aligned).
///
/// Few large segments, not many small ones: each segment is one reader call whose pieces
/// are queued in order, and segments in flight at once queue theirs in whatever order
/// their threads run. Measured on k3-mid at 3 GB + 1 GB with decoding switched off (the
/// read pattern alone), same 128 MiB of staging and ~7.5 pieces in flight either way:
/// 8 × 16 MiB read at 1.09 GB/s of the drive's best 1.43; 2 × 64 MiB at 1.26 of 1.32.
pub const SEGMENT_BYTES: usize = 64 << 20;
/// Segments read at once while earlier ones decode.
pub const STAGING_SEGMENTS: usize = 2;

/// Bytes read first from a coded layer: its directory and, usually, its first blocks.
const DIRECTORY_READ: usize = 64 << 10;

/// How `k3 pack` stores trunk layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrunkCodec {
    /// Every layer as the shards hold it (the default).
    #[default]
    Raw,
    /// The bf16 high bytes Huffman-coded (`k3_codec`); layers it does not shrink stay raw.
    Huffman,
}

impl TrunkCodec {
    /// The name on the command line and in `trunk.json`.
    pub fn name(self) -> &'static str {
        match self {
            TrunkCodec::Raw => "raw",
            TrunkCodec::Huffman => k3_codec::CODEC_NAME,
        }
    }

    /// Parses a `--codec` value.
    pub fn parse(name: &str) -> Option<TrunkCodec> {
        [TrunkCodec::Raw, TrunkCodec::Huffman].into_iter().find(|c| c.name() == name)
    }

    /// `k3 pack --codec auto`: coding pays only where this CPU decodes (on every core) at
    /// least [`DECODE_OVER_DRIVE`] × what the drive reads: a streamed layer then waits for
    /// its coded bytes (~0.67 × raw) rather than for its decode, with room left for the
    /// kernels that share the cores. Otherwise the layers stay raw. Returns why, too.
    pub fn for_rates(decode_bytes_per_second: f64, drive_bytes_per_second: f64) -> (TrunkCodec, String) {
        let ratio = decode_bytes_per_second / drive_bytes_per_second.max(1.0);
        let rates = format!(
            "decode {:.2} GB/s on every core vs the drive's best {:.2} GB/s ({ratio:.2}×)",
            decode_bytes_per_second / 1e9,
            drive_bytes_per_second / 1e9
        );
        if ratio >= DECODE_OVER_DRIVE {
            (TrunkCodec::Huffman, format!("{rates}: coding pays"))
        } else {
            (
                TrunkCodec::Raw,
                format!("{rates}: below {DECODE_OVER_DRIVE}×, the decode would not pay for the bytes saved"),
            )
        }
    }
}

/// How much faster than the drive the decoder must be for `--codec auto` to code.
pub const DECODE_OVER_DRIVE: f64 = 1.5;

/// A layer's run coded for `trunk.bin`, or `None` when coding would not make it smaller.
pub fn code_run(raw: &[u8]) -> Option<(Vec<u8>, CodedSpan)> {
    let coded = encode_layer(raw);
    if coded.bytes.len() >= k3_codec::aligned(raw.len()) {
        return None;
    }
    let span = CodedSpan { stored_len: coded.bytes.len() as u64, stored_crc32: crc32fast::hash(&coded.bytes) };
    Some((coded.bytes, span))
}

/// The staging buffers of coded reads, reused layer after layer.
pub struct Staging {
    /// Bytes of one buffer: a segment, or the largest coded layer when it is smaller.
    segment_bytes: usize,
    free: Mutex<Vec<Blob>>,
}

/// A block's coded bytes at most (1 MiB raw, its header and tables, 4096-aligned), so a
/// segment that ends early still holds more than `SEGMENT_BYTES` less this.
const BLOCK_CODED_MAX: u64 = 2 << 20;

impl Staging {
    /// Staging for a trunk whose largest coded layer stores `largest_coded` bytes.
    pub fn for_largest(largest_coded: u64) -> Self {
        let segment_bytes = (SEGMENT_BYTES as u64).min(largest_coded.next_multiple_of(4096)) as usize;
        Staging { segment_bytes, free: Mutex::new(Vec::new()) }
    }

    /// The most bytes these buffers hold: a segment for each segment in flight, at most
    /// [`STAGING_SEGMENTS`] and at most the largest layer's segment count.
    pub fn most_bytes(largest_coded: u64) -> u64 {
        let segment = (SEGMENT_BYTES as u64).min(largest_coded.next_multiple_of(4096));
        let segments = if largest_coded <= SEGMENT_BYTES as u64 {
            u64::from(largest_coded > 0)
        } else {
            largest_coded.div_ceil(SEGMENT_BYTES as u64 - BLOCK_CODED_MAX)
        };
        segment * segments.min(STAGING_SEGMENTS as u64)
    }

    /// Staging of `segment_bytes` buffers (tests: many segments from a small layer).
    #[cfg(test)]
    fn with_segment_bytes(segment_bytes: usize) -> Self {
        Staging { segment_bytes, free: Mutex::new(Vec::new()) }
    }

    fn take(&self) -> Blob {
        let free = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        free.unwrap_or_else(|| Blob::zeroed(self.segment_bytes))
    }

    fn give(&self, blobs: impl IntoIterator<Item = Blob>) {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        free.extend(blobs);
        free.truncate(STAGING_SEGMENTS);
    }
}

/// What a coded read needs besides the layer.
pub struct CodedRead<'a> {
    pub io: &'a Reader,
    pub file: &'a DirectFile,
    pub bin_path: &'a Path,
    pub staging: &'a Staging,
    pub stop: &'a CancelToken,
}

/// Reads coded layer `layer_idx` (`p`) and decodes it into `out` (its run length);
/// returns the CRC-32 of the decoded run and the time spent decoding (not waiting).
pub fn read_coded_layer(
    r: &CodedRead,
    (layer_idx, p): (usize, &PackedLayer),
    span: CodedSpan,
    out: &mut [u8],
) -> Result<(u32, std::time::Duration)> {
    let bad = |reason: String| Error::Trunk { path: r.bin_path.to_path_buf(), reason };
    let undecodable =
        |e: k3_codec::CodecError| bad(format!("layer {layer_idx}'s coded bytes do not decode: {e} (re-run `k3 pack`)"));
    let stored = span.stored_len as usize;
    // One read covers the directory of any layer up to 16 GB (16,378 blocks).
    let head = read_bytes(r, p.file_off, DIRECTORY_READ.min(stored))?;
    let dir_len = Directory::padded_len(&head).map_err(undecodable)?;
    let head = if dir_len > head.len() { read_bytes(r, p.file_off, dir_len.min(stored))? } else { head };
    let dir = Directory::read(&head, stored).map_err(undecodable)?;
    if dir.raw_len != out.len() {
        return Err(bad(format!(
            "layer {layer_idx} decodes to {} bytes, its run has {} (re-run `k3 pack`)",
            dir.raw_len,
            out.len()
        )));
    }
    let segments = segments(&dir, r.staging.segment_bytes);
    let mut crc = crc32fast::Hasher::new();
    let mut decoding = std::time::Duration::ZERO;
    let mut outs = chunk_outputs(&dir, out);
    std::thread::scope(|scope| -> Result<()> {
        let (done_tx, done_rx) = mpsc::channel::<(usize, Result<Blob>)>();
        let (free_tx, free_rx) = mpsc::channel::<Blob>();
        for _ in 0..STAGING_SEGMENTS.min(segments.len()) {
            let _ = free_tx.send(r.staging.take());
        }
        let to_read: Vec<(u64, usize)> = segments
            .iter()
            .map(|blocks| {
                let (first, last) = (dir.blocks[blocks.start].0, dir.blocks[blocks.end - 1]);
                (p.file_off + first as u64, last.0 + last.1 - first)
            })
            .collect();
        scope.spawn(move || {
            for (k, window) in to_read.into_iter().enumerate() {
                let Ok(mut blob) = free_rx.recv() else { return };
                let done_tx = done_tx.clone();
                scope.spawn(move || {
                    let read =
                        r.io.read_window_until(r.file, &mut blob, window, (Urgency::Next, Checksum::None), r.stop);
                    let _ = done_tx.send((k, read.map(|_| blob).map_err(Error::from)));
                });
            }
        });
        let mut arrived: BTreeMap<usize, Result<Blob>> = BTreeMap::new();
        let mut spent = Vec::new();
        for (k, blocks) in segments.iter().enumerate() {
            while !arrived.contains_key(&k) {
                let (i, read) = done_rx
                    .recv()
                    .map_err(|_| bad(format!("layer {layer_idx}: a segment read ended without a result")))?;
                arrived.insert(i, read);
            }
            let Some(blob) = arrived.remove(&k) else { continue };
            let blob = blob?;
            let seg_start = dir.blocks[blocks.start].0;
            let coded = |i: usize| {
                let (at, len) = dir.blocks[i];
                &blob.bytes()[at - seg_start..at - seg_start + len]
            };
            // The segment's blocks decode on the current pool's threads (the trunk reader's
            // two, or the compute pool's when the compute thread itself is waiting).
            let started = std::time::Instant::now();
            let sum = decode_blocks(blocks.clone(), &coded, &mut outs[blocks.clone()]).map_err(undecodable)?;
            decoding += started.elapsed();
            crc.combine(&sum);
            if k + STAGING_SEGMENTS < segments.len() {
                let _ = free_tx.send(blob);
            } else {
                spent.push(blob);
            }
        }
        r.staging.give(spent);
        Ok(())
    })?;
    Ok((crc.finalize(), decoding))
}

/// A layer held coded in RAM (`LayerResidency::PinnedCoded`): its stored bytes and their
/// directory, decoded into a ring buffer every time the layer is used.
pub struct HeldCoded {
    blob: Blob,
    dir: Directory,
}

/// Reads coded layer `layer_idx`'s stored bytes into RAM in one read and parses their
/// directory (a damaged one is refused here; damaged blocks are found by each decode and
/// its CRC-32).
pub fn load_coded_layer(r: &CodedRead, (layer_idx, p): (usize, &PackedLayer), span: CodedSpan) -> Result<HeldCoded> {
    let stored = span.stored_len as usize;
    let mut blob = Blob::zeroed(stored);
    let read =
        r.io.read_window_until(r.file, &mut blob, (p.file_off, stored), (Urgency::Next, Checksum::Crc32), r.stop)?;
    if read.checksum != span.stored_crc32 {
        return Err(Error::Trunk {
            path: r.bin_path.to_path_buf(),
            reason: format!(
                "layer {layer_idx}'s coded bytes fail their CRC-32 check (stored {:08x}, read {:08x}): re-run `k3 pack`",
                span.stored_crc32, read.checksum
            ),
        });
    }
    let bytes = &blob.bytes()[..stored];
    let undecodable = |e: k3_codec::CodecError| Error::Trunk {
        path: r.bin_path.to_path_buf(),
        reason: format!("layer {layer_idx}'s coded bytes do not decode: {e} (re-run `k3 pack`)"),
    };
    let dir_len = Directory::padded_len(bytes).map_err(undecodable)?;
    let dir = Directory::read(&bytes[..dir_len.min(stored)], stored).map_err(undecodable)?;
    if dir.raw_len != p.run_len as usize {
        return Err(Error::Trunk {
            path: r.bin_path.to_path_buf(),
            reason: format!(
                "layer {layer_idx} decodes to {} bytes, its run has {} (re-run `k3 pack`)",
                dir.raw_len, p.run_len
            ),
        });
    }
    Ok(HeldCoded { blob, dir })
}

/// Decodes a layer held coded into `out` (its run) on the current pool's threads; returns
/// the CRC-32 of the decoded run.
pub fn decode_held(held: &HeldCoded, layer_idx: usize, bin_path: &Path, out: &mut [u8]) -> Result<u32> {
    let bytes = held.blob.bytes();
    let coded = |i: usize| {
        let (at, len) = held.dir.blocks[i];
        &bytes[at..at + len]
    };
    let mut outs = chunk_outputs(&held.dir, out);
    let crc = decode_blocks(0..held.dir.blocks.len(), &coded, &mut outs).map_err(|e| Error::Trunk {
        path: bin_path.to_path_buf(),
        reason: format!("layer {layer_idx}'s coded bytes in RAM do not decode: {e} (re-run `k3 pack`)"),
    })?;
    Ok(crc.finalize())
}

thread_local! {
    /// Each decoding thread's scratch, kept from segment to segment and layer to layer: its
    /// high-byte buffer stays mapped and the last code's tables stay built (a layer's
    /// blocks share a code per 16 of them), where a fresh scratch per rayon split would
    /// fault in 512 KiB and rebuild the tables each time.
    static DECODE_SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Decodes blocks `blocks` (block `i`'s coded bytes are `coded(i)`; `outs` holds their
/// outputs, in order) on the current rayon pool; returns the CRC-32 of the decoded bytes.
/// What the streamed trunk runs per segment and `k3 bench codec` times on a whole layer.
pub fn decode_blocks<'c>(
    blocks: std::ops::Range<usize>,
    coded: &(dyn Fn(usize) -> &'c [u8] + Sync),
    outs: &mut [&mut [u8]],
) -> std::result::Result<crc32fast::Hasher, k3_codec::CodecError> {
    let sums: Vec<std::result::Result<crc32fast::Hasher, k3_codec::CodecError>> = blocks
        .into_par_iter()
        .zip(outs.par_iter_mut())
        .map(|(i, piece)| {
            let mut sum = crc32fast::Hasher::new();
            DECODE_SCRATCH
                .with_borrow_mut(|scratch| decode_block_summed(coded(i), piece, scratch, &mut sum))
                .map_err(|reason| k3_codec::CodecError::Block { block: i, reason })?;
            Ok(sum)
        })
        .collect();
    let mut crc = crc32fast::Hasher::new();
    for sum in sums {
        crc.combine(&sum?);
    }
    Ok(crc)
}

/// Reads `len` bytes of `trunk.bin` at `offset` (4096-aligned) into a small buffer.
fn read_bytes(r: &CodedRead, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut blob = Blob::zeroed(len);
    r.io.read_window_until(r.file, &mut blob, (offset, len), (Urgency::Next, Checksum::None), r.stop)?;
    Ok(blob.bytes()[..len].to_vec())
}

/// The blocks of each segment: consecutive blocks whose coded bytes span at most
/// `segment_bytes` (a staging buffer; a block is never split, and one block is far smaller
/// than a segment).
fn segments(dir: &Directory, segment_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..dir.blocks.len() {
        let (first, (at, len)) = (dir.blocks[start].0, dir.blocks[i]);
        if i > start && at + len - first > segment_bytes {
            out.push(start..i);
            start = i;
        }
    }
    if start < dir.blocks.len() {
        out.push(start..dir.blocks.len());
    }
    out
}

/// `out` split into each block's raw bytes.
fn chunk_outputs<'o>(dir: &Directory, out: &'o mut [u8]) -> Vec<&'o mut [u8]> {
    out.chunks_mut(dir.block_raw).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advanced::bench::codec_rates::weight_like_bf16;
    use crate::io::ReadPattern;

    #[test]
    fn a_layer_of_many_segments_reuses_its_staging_and_decodes_exactly() {
        let raw = weight_like_bf16(6 << 20); // 12 MiB: ~8 MiB coded, in segments of at most 2 MiB
        let coded = encode_layer(&raw);
        let path = std::env::temp_dir().join(format!("k3-trunk-codec-segments-{}.bin", std::process::id()));
        std::fs::write(&path, &coded.bytes).unwrap();
        let layer = PackedLayer {
            shard_idx: 0,
            run_start: 0,
            run_len: raw.len() as u64,
            file_off: 0,
            crc32: crc32fast::hash(&raw),
            coding: Some(CodedSpan {
                stored_len: coded.bytes.len() as u64,
                stored_crc32: crc32fast::hash(&coded.bytes),
            }),
            tensors: Vec::new(),
        };
        let io = Reader::new(ReadPattern { request_bytes: 1 << 20, depth: 4 }).unwrap();
        let file = DirectFile::open(&path).unwrap();
        let staging = Staging::with_segment_bytes(2 << 20);
        let stop = CancelToken::new();
        let read = CodedRead { io: &io, file: &file, bin_path: &path, staging: &staging, stop: &stop };
        let dir = Directory::read(&coded.bytes, coded.bytes.len()).unwrap();
        assert!(segments(&dir, 2 << 20).len() > 2 * STAGING_SEGMENTS, "enough segments to reuse the staging");
        let mut out = vec![0u8; raw.len()];
        let span = layer.coding.unwrap();
        let (crc, _) = read_coded_layer(&read, (0, &layer), span, &mut out).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(crc, layer.crc32, "the CRC-32 of the decoded run");
        assert!(out == raw, "the decoded layer is the raw run");
        // Every buffer the read took is back (`give` keeps at most STAGING_SEGMENTS, and the
        // read took exactly that many), so the next layer allocates none.
        assert_eq!(staging.free.lock().unwrap().len(), STAGING_SEGMENTS, "the staging buffers came back");
    }

    #[test]
    fn auto_codes_only_where_the_decoder_outpaces_the_drive() {
        // This machine: 5.9 GB/s decoded on 2 cores, a 1.8 GB/s virtio drive.
        assert_eq!(TrunkCodec::for_rates(5.9e9, 1.8e9).0, TrunkCodec::Huffman);
        // A 2-core laptop on a 7 GB/s NVMe drive: decoding would be the bottleneck.
        let (codec, why) = TrunkCodec::for_rates(6.4e9, 7.0e9);
        assert_eq!(codec, TrunkCodec::Raw);
        assert!(why.contains("would not pay"), "{why}");
        assert_eq!(TrunkCodec::for_rates(1.0e9, 0.0).0, TrunkCodec::Huffman, "no drive figure: any decoder wins");
    }
}
