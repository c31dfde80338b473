//! NEON interleave of a block's low and high bytes (aarch64): the twin of `simd.rs`'s SSE2
//! one, byte for byte.
//!
//! `vst2q_u8` stores two 16-byte vectors interleaved (`out[2i] = low[i]`,
//! `out[2i + 1] = high[i]`) in one instruction. Plain stores: Rust exposes no non-temporal
//! NEON store intrinsic, and many aarch64 cores (Cortex-A, Neoverse) switch to a
//! write-streaming mode on a long run of whole-line writes, without fetching the lines
//! they overwrite (not measured here). When a CRC-32 of the output is wanted, each 4 KiB run is summed
//! right after it is written, while it is still in L1.
//! Owns: the codec's aarch64 SIMD `unsafe` (NEON is part of aarch64: no detection is
//! needed). Must not: write outside `out`, or sum other bytes than those written, in the
//! order written.

use std::arch::aarch64::{uint8x16x2_t, vld1q_u8, vst2q_u8};

/// Words interleaved, then summed, at a time (4 KiB of output).
const CHUNK_WORDS: usize = 2048;

/// Interleaves the leading words of `low` and `high` into `out` in whole runs of 16
/// (`out[2i] = low[i]`, `out[2i + 1] = high[i]`), adding the bytes written to `sum`;
/// returns how many words it wrote: the caller does the rest.
pub fn interleave(low: &[u8], high: &[u8], out: &mut [u8], mut sum: Option<&mut crc32fast::Hasher>) -> usize {
    let words = low.len().min(high.len()).min(out.len() / 2) / 16 * 16;
    for at in (0..words).step_by(CHUNK_WORDS) {
        let n = CHUNK_WORDS.min(words - at);
        let dest = &mut out[2 * at..2 * (at + n)];
        interleave_run(&low[at..at + n], &high[at..at + n], dest);
        if let Some(sum) = sum.as_deref_mut() {
            sum.update(dest);
        }
    }
    words
}

/// `dest[2i] = low[i]`, `dest[2i + 1] = high[i]` for a run whose length is a multiple of 16.
fn interleave_run(low: &[u8], high: &[u8], dest: &mut [u8]) {
    assert!(low.len() == high.len() && dest.len() == 2 * low.len() && low.len().is_multiple_of(16));
    let (lp, hp, op) = (low.as_ptr(), high.as_ptr(), dest.as_mut_ptr());
    for i in (0..low.len()).step_by(16) {
        // SAFETY: i + 16 <= low.len() == high.len() (asserted multiple of 16), so the loads
        // read low[i..i + 16] and high[i..i + 16] and the store writes dest[2i..2i + 32],
        // inside `dest` (twice as long); NEON loads and stores need no alignment.
        unsafe { vst2q_u8(op.add(2 * i), uint8x16x2_t(vld1q_u8(lp.add(i)), vld1q_u8(hp.add(i)))) };
    }
}
