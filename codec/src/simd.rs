//! SSE2 interleave of a block's low and high bytes, written with non-temporal stores.
//!
//! A decoded layer is written once and read much later (by the layer's compute), so its
//! bytes go straight to memory (`movntdq`) instead of each line first being read into the
//! cache: a third less memory traffic, measured +22 % on the whole decode of a k3-mid
//! layer on one core. When a CRC-32 of the output is wanted, each 4 KiB is interleaved into
//! a buffer in L1, summed there, then streamed out, so the sum never reads memory back.
//! Owns: the codec's x86-64 SIMD `unsafe` (SSE2 is part of x86-64: no detection is
//! needed); `simd_neon.rs` is its aarch64 twin.
//! Must not: write outside `out`, sum other bytes than those written, or leave the streaming
//! stores unfenced.

use std::arch::x86_64::{__m128i, _mm_load_si128, _mm_loadu_si128, _mm_sfence, _mm_store_si128};
use std::arch::x86_64::{_mm_stream_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8};

/// Words interleaved through the L1 buffer at a time (4 KiB of output).
const CHUNK_WORDS: usize = 2048;

#[repr(C, align(64))]
struct Chunk([u8; 2 * CHUNK_WORDS]);

/// Interleaves the leading words of `low` and `high` into `out` in whole 4 KiB chunks
/// (`out[2i] = low[i]`, `out[2i + 1] = high[i]`), adding the bytes written to `sum`;
/// returns how many words it wrote (none when `out` is not 16-byte aligned): the caller
/// does the rest.
pub fn interleave_streaming(low: &[u8], high: &[u8], out: &mut [u8], mut sum: Option<&mut crc32fast::Hasher>) -> usize {
    if !(out.as_ptr() as usize).is_multiple_of(16) {
        return 0;
    }
    let words = low.len().min(high.len()).min(out.len() / 2) / CHUNK_WORDS * CHUNK_WORDS;
    let mut chunk = Chunk([0; 2 * CHUNK_WORDS]);
    for at in (0..words).step_by(CHUNK_WORDS) {
        let (l, h) = (&low[at..at + CHUNK_WORDS], &high[at..at + CHUNK_WORDS]);
        let dest = &mut out[2 * at..2 * (at + CHUNK_WORDS)];
        match sum.as_deref_mut() {
            Some(sum) => {
                interleave_chunk(l, h, &mut chunk.0, Store::Cached);
                sum.update(&chunk.0);
                copy_streaming(&chunk.0, dest);
            }
            None => interleave_chunk(l, h, dest, Store::Streaming),
        }
    }
    // SAFETY: a store fence has no operands; it orders the streaming stores above before
    // any later store, so a thread that syncs with this one afterwards sees the bytes.
    unsafe { _mm_sfence() };
    words
}

#[derive(Clone, Copy, PartialEq)]
enum Store {
    Cached,
    Streaming,
}

/// One chunk: `CHUNK_WORDS` words of `low` and `high` into `dest` (16-byte aligned).
fn interleave_chunk(low: &[u8], high: &[u8], dest: &mut [u8], store: Store) {
    assert!(low.len() == CHUNK_WORDS && high.len() == CHUNK_WORDS && dest.len() == 2 * CHUNK_WORDS);
    assert!((dest.as_ptr() as usize).is_multiple_of(16));
    let (lp, hp, op) = (low.as_ptr(), high.as_ptr(), dest.as_mut_ptr());
    for i in (0..CHUNK_WORDS).step_by(16) {
        // SAFETY: i + 16 <= CHUNK_WORDS (asserted lengths), so the loads read low[i..i + 16]
        // and high[i..i + 16] and the stores write dest[2i..2i + 32], all inside their
        // slices; `dest` is 16-byte aligned (asserted) and 2i a multiple of 32, as the
        // aligned stores require.
        unsafe {
            let l = _mm_loadu_si128(lp.add(i).cast::<__m128i>());
            let h = _mm_loadu_si128(hp.add(i).cast::<__m128i>());
            let (a, b) = (_mm_unpacklo_epi8(l, h), _mm_unpackhi_epi8(l, h));
            let (oa, ob) = (op.add(2 * i).cast::<__m128i>(), op.add(2 * i + 16).cast::<__m128i>());
            if store == Store::Streaming {
                _mm_stream_si128(oa, a);
                _mm_stream_si128(ob, b);
            } else {
                _mm_store_si128(oa, a);
                _mm_store_si128(ob, b);
            }
        }
    }
}

/// Copies `src` to `dest` (same length, a multiple of 16, both 16-byte aligned) with
/// streaming stores.
fn copy_streaming(src: &[u8], dest: &mut [u8]) {
    assert!(src.len() == dest.len() && src.len().is_multiple_of(16));
    assert!((src.as_ptr() as usize).is_multiple_of(16) && (dest.as_ptr() as usize).is_multiple_of(16));
    for i in (0..src.len()).step_by(16) {
        // SAFETY: i + 16 <= len (asserted multiple of 16), so both accesses are inside their
        // slices, and both addresses are 16-byte aligned (asserted), as the aligned load and
        // the streaming store require.
        unsafe {
            _mm_stream_si128(dest.as_mut_ptr().add(i).cast::<__m128i>(), _mm_load_si128(src.as_ptr().add(i).cast()))
        };
    }
}
