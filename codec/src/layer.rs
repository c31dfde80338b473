//! A coded layer: a directory, then its blocks, each starting 4096-aligned.
//!
//! Layout (little-endian): `b"K3HC"`, `version: u32` (1), `raw_len: u64`, `block_raw: u32`,
//! `n_blocks: u32`, then each block's coded length (`u32`), zero-padded to [`crate::ALIGN`]; block
//! `i` starts at the directory's padded size plus the padded lengths of the blocks before it.
//! Owns: [`encode_layer`] (blocks coded on every core, stored where coding does not shrink
//! them), [`Directory`] (read from the layer's first page(s), so a reader can fetch and
//! decode the blocks in groups as they arrive) and [`LayerDecoder`], which decodes a whole
//! layer block by block, handing each decoded block to a callback while it is in cache.
//! Must not: read a block the directory places outside the coded bytes, or produce a layer
//! whose blocks do not add up to `raw_len`.

use crate::block::{decode_block, high_byte_counts, plan_block_sharing, write_block, BlockKind, BlockPlan, Scratch};
use crate::huffman::code_lengths;
use rayon::prelude::*;

use crate::{aligned, CodecError, BLOCK_RAW};

const MAGIC: &[u8; 4] = b"K3HC";
const VERSION: u32 = 1;
/// The directory's fixed part, before the block lengths.
pub const FIXED: usize = 24;

/// A layer's coded bytes (a multiple of [`ALIGN`] long) and what they hold.
#[derive(Debug, Clone)]
pub struct CodedLayer {
    pub bytes: Vec<u8>,
    pub raw_len: usize,
    pub blocks: usize,
    pub stored_blocks: usize,
}

/// Blocks that try one shared code (16 MiB of raw bytes).
const SHARING_GROUP: usize = 16;

/// Codes `raw` block by block, the blocks on every core, into one buffer allocated once
/// (each block planned first, so its place is known before it is written). Each group of
/// [`SHARING_GROUP`] blocks builds one code from its summed counts, and a block uses it
/// wherever it costs almost nothing over the block's own code (`plan_block_sharing`), so a
/// decoder rebuilds its tables once per group rather than once per block.
pub fn encode_layer(raw: &[u8]) -> CodedLayer {
    let plans: Vec<BlockPlan> = raw
        .par_chunks(BLOCK_RAW * SHARING_GROUP)
        .flat_map_iter(|group| {
            let shared = code_lengths(&high_byte_counts(group));
            group.chunks(BLOCK_RAW).map(move |block| plan_block_sharing(block, Some(&shared)))
        })
        .collect();
    let dir_len = aligned(FIXED + 4 * plans.len());
    let total = dir_len + plans.iter().map(|p| aligned(p.len)).sum::<usize>();
    let mut bytes = vec![0u8; total];
    let (head, mut rest) = bytes.split_at_mut(dir_len);
    head[..4].copy_from_slice(MAGIC);
    head[4..8].copy_from_slice(&VERSION.to_le_bytes());
    head[8..16].copy_from_slice(&(raw.len() as u64).to_le_bytes());
    head[16..20].copy_from_slice(&(BLOCK_RAW as u32).to_le_bytes());
    head[20..24].copy_from_slice(&(plans.len() as u32).to_le_bytes());
    let mut slots = Vec::with_capacity(plans.len());
    for (i, p) in plans.iter().enumerate() {
        head[FIXED + 4 * i..FIXED + 4 * i + 4].copy_from_slice(&(p.len as u32).to_le_bytes());
        let (slot, after) = std::mem::take(&mut rest).split_at_mut(aligned(p.len));
        slots.push(&mut slot[..p.len]);
        rest = after;
    }
    raw.par_chunks(BLOCK_RAW).zip(plans.par_iter()).zip(slots.into_par_iter()).for_each(|((piece, plan), slot)| {
        write_block(piece, plan, slot);
    });
    let stored_blocks = plans.iter().filter(|p| p.kind == BlockKind::Stored).count();
    CodedLayer { bytes, raw_len: raw.len(), blocks: plans.len(), stored_blocks }
}

/// Where each block of a coded layer is, read from its directory.
#[derive(Debug, Clone)]
pub struct Directory {
    pub raw_len: usize,
    pub block_raw: usize,
    /// `(offset in the coded bytes, coded length)` of each block.
    pub blocks: Vec<(usize, usize)>,
}

impl Directory {
    /// The directory's padded length, from at least its first [`FIXED`] bytes.
    pub fn padded_len(head: &[u8]) -> Result<usize, CodecError> {
        let n = head.get(20..24).ok_or_else(|| CodecError::Directory(format!("{} bytes: no directory", head.len())))?;
        Ok(aligned(FIXED + 4 * u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize))
    }

    /// Reads and checks the directory at the head of `coded` (at least its
    /// [`Directory::padded_len`] bytes) of a coded layer `coded_len` bytes long.
    pub fn read(coded: &[u8], coded_len: usize) -> Result<Directory, CodecError> {
        let bad = |m: String| CodecError::Directory(m);
        let head = coded.get(..FIXED).ok_or_else(|| bad(format!("{} bytes: no directory", coded.len())))?;
        let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
        if &head[..4] != MAGIC || u32_at(head, 4) != VERSION as usize {
            return Err(bad("not a K3HC v1 coded layer (magic or version)".into()));
        }
        let mut raw8 = [0u8; 8];
        raw8.copy_from_slice(&head[8..16]);
        let raw_len = usize::try_from(u64::from_le_bytes(raw8)).map_err(|_| bad("raw length overflows".into()))?;
        let (block_raw, n_blocks) = (u32_at(head, 16), u32_at(head, 20));
        if block_raw != BLOCK_RAW || n_blocks != raw_len.div_ceil(block_raw) {
            return Err(bad(format!("{n_blocks} blocks of {block_raw} bytes cannot hold {raw_len} bytes")));
        }
        let dir_len = aligned(FIXED + 4 * n_blocks);
        let lens =
            coded.get(FIXED..FIXED + 4 * n_blocks).ok_or_else(|| bad("truncated inside the directory".into()))?;
        let mut at = dir_len;
        let mut blocks = Vec::with_capacity(n_blocks);
        for i in 0..n_blocks {
            let len = u32_at(lens, 4 * i);
            blocks.push((at, len));
            at += aligned(len);
        }
        if at > coded_len {
            return Err(bad(format!("its blocks need {at} bytes but {coded_len} are there (truncated)")));
        }
        Ok(Directory { raw_len, block_raw, blocks })
    }
}

impl Directory {
    /// The raw bytes block `i` decodes to.
    pub fn raw_range(&self, i: usize) -> std::ops::Range<usize> {
        (i * self.block_raw).min(self.raw_len)..((i + 1) * self.block_raw).min(self.raw_len)
    }
}

/// Decodes coded layers, keeping its scratch (buffer, last code's tables) from block to block.
#[derive(Default)]
pub struct LayerDecoder {
    scratch: Scratch,
}

impl LayerDecoder {
    /// Decodes `coded` into `out` (exactly the layer's raw length), calling `on_block` with
    /// each decoded block in order.
    pub fn decode(&mut self, coded: &[u8], out: &mut [u8], on_block: &mut dyn FnMut(&[u8])) -> Result<(), CodecError> {
        let dir = Directory::read(coded, coded.len())?;
        if dir.raw_len != out.len() {
            return Err(CodecError::Directory(format!("holds {} bytes, the layer has {}", dir.raw_len, out.len())));
        }
        for (i, (&(at, len), piece)) in dir.blocks.iter().zip(out.chunks_mut(dir.block_raw)).enumerate() {
            decode_block(&coded[at..at + len], piece, &mut self.scratch)
                .map_err(|reason| CodecError::Block { block: i, reason })?;
            on_block(piece);
        }
        Ok(())
    }
}

/// Decodes a whole coded layer into a new buffer of its raw length.
pub fn decode_layer(coded: &[u8]) -> Result<Vec<u8>, CodecError> {
    let dir = Directory::read(coded, coded.len())?;
    let mut out = vec![0u8; dir.raw_len];
    LayerDecoder::default().decode(coded, &mut out, &mut |_| {})?;
    Ok(out)
}
