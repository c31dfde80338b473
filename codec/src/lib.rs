//! Lossless coding of a packed trunk's layers (`k3 pack --codec huffman`).
//!
//! A bf16 weight's high byte (sign + 7 exponent bits) carries ~2.7 bits of information in
//! trained and synthetic weights alike; its low byte (last exponent bit + mantissa) is close
//! to noise. So a layer's run is read as little-endian 16-bit words: the high bytes are
//! Huffman-coded per 1 MiB block, the low bytes are kept raw, and a block that would not
//! shrink (f32 norms, odd data) is stored as it is.
//!
//! Owns: the layer format ([`layer`]: a directory page, then blocks each starting 4096-aligned),
//! the block format ([`block`]), the length-limited canonical code ([`huffman`]), and the
//! fast decoder ([`fast`]: eight interleaved bit streams, up to six symbols per table
//! lookup; `simd`: the low and high bytes interleaved with streaming stores, summed on the
//! way, on x86-64; `simd_neon`: its NEON twin on aarch64) with its plain reference twin
//! ([`block::decode_block_reference`]). The encoder shares one code among each 16 blocks
//! where that costs under 0.5 % of a block, so the decoder's tables are rebuilt once per
//! 16 MiB rather than per block.
//! Must not: return bytes that were not fully decoded — every malformed directory, table,
//! stream length or stream is a [`CodecError`] naming the block; the engine's per-layer CRC
//! then covers the decoded bytes.
//! Why by hand: the decode rate is the product's speed on a 2-core machine (it must beat
//! ~3 GB/s of output per core to pay for the bytes saved off a 2.8 GB/s drive). Measured on
//! the synthetic k3-mid high bytes, `zstd -1` reached 1.08 GB/s of high bytes (≈2.2 GB/s of
//! output) at 2.95 bits per byte, against the Huffman code's 2.71 bits; no Rust crate exposes a
//! multi-symbol, multi-stream Huffman decoder, so this one is written here (see ARCHITECTURE.md).

pub mod bits;
pub mod block;
pub mod fast;
pub mod huffman;
pub mod layer;
#[cfg(target_arch = "x86_64")]
mod simd;
#[cfg(target_arch = "aarch64")]
mod simd_neon;

pub use block::{decode_block, decode_block_summed, encode_block, BlockKind};
pub use layer::{decode_layer, encode_layer, CodedLayer, Directory, LayerDecoder};

/// Raw bytes per block (the last block of a layer may be shorter).
pub const BLOCK_RAW: usize = 1 << 20;
/// Alignment of the directory and of every block's start within a coded layer.
pub const ALIGN: usize = 4096;
/// The codec's name in `trunk.json` and on the command line.
pub const CODEC_NAME: &str = "huffman";

/// Why coded bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("the directory is malformed: {0}")]
    Directory(String),
    #[error("block {block}: {reason}")]
    Block { block: usize, reason: String },
}

/// Rounds `n` up to [`ALIGN`].
pub fn aligned(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}
