//! The fast decoder: a block's bit streams decoded together, up to six symbols per lookup.
//!
//! Each round takes [`ROUND`] table lookups from every stream in turn, so the streams'
//! dependency chains (load the window → look up → advance) overlap in the CPU. A lookup
//! writes its whole entry (eight bytes, up to six of them symbols) at once and advances by
//! its count — the next lookup of that stream overwrites the rest; the round runs
//! only while every stream has room for that (no write can reach the next stream's symbols)
//! and while every 8-byte window read stays inside the streams. What is left is finished one
//! symbol at a time with bounded reads, and every stream must end inside its stated length.
//! Owns: the codec's unchecked loads and stores in [`round`] (its other `unsafe` is the
//! SSE2 interleave in `simd.rs`).
//! Easy to break: the safety conditions in [`decode_streams`] are what make [`round`] sound;
//! a change to `MULTI_BITS`, the entry layout or `ROUND` must keep them true.

use crate::bits::{peek, STREAMS};
use crate::huffman::{entry_bits, entry_count, DecodeTables, MULTI_BITS, MULTI_SIZE, MULTI_SYMBOLS, TABLE_SIZE};

/// Lookups per stream per round.
const ROUND: usize = 2;
/// Bytes one lookup writes (its whole table entry).
const WRITE: usize = 8;

/// Where one stream's bytes lie in the block's streams, and which high bytes it yields.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamBounds {
    pub start: usize,
    pub end: usize,
    pub out_start: usize,
    pub out_end: usize,
}

/// Decodes every stream of `src` into `high` (at least the last `out_end` long).
pub fn decode_streams(
    tables: &DecodeTables,
    src: &[u8],
    bounds: &[StreamBounds; STREAMS],
    high: &mut [u8],
) -> Result<(), String> {
    assert_eq!(tables.multi.len(), MULTI_SIZE, "a multi-symbol table has MULTI_SIZE entries");
    let mut bit = bounds.map(|b| b.start * 8);
    let mut out = bounds.map(|b| b.out_start);
    let read_margin = (ROUND * MULTI_BITS as usize).div_ceil(8) + 8;
    let write_margin = MULTI_SYMBOLS * (ROUND - 1) + WRITE;
    loop {
        let room = (0..STREAMS).all(|k| {
            out[k] + write_margin <= bounds[k].out_end.min(high.len()) && bit[k] / 8 + read_margin <= src.len()
        });
        if !room {
            break;
        }
        // SAFETY: for every stream, each of the ROUND lookups consumes at most MULTI_BITS bits
        // (an entry's bit count never exceeds MULTI_BITS), so every 8-byte window read starts
        // before `bit/8 + ROUND·MULTI_BITS/8` and ends inside `src` (read_margin); each lookup
        // writes WRITE bytes and advances at most MULTI_SYMBOLS, so every write ends before
        // `out_end` (write_margin), inside `high`; table indices are masked to MULTI_SIZE.
        unsafe { round(&tables.multi, src, &mut bit, &mut out, high) };
    }
    for (k, b) in bounds.iter().enumerate() {
        while out[k] < b.out_end {
            let window = peek(src, bit[k]) as usize & (TABLE_SIZE - 1);
            let s = tables.single[window];
            high[out[k]] = s as u8;
            out[k] += 1;
            bit[k] += usize::from(s >> 8);
        }
        let used = bit[k] - b.start * 8;
        if used.div_ceil(8) != b.end - b.start {
            return Err(format!("stream {k} has {} bytes but its codes take {used} bits", b.end - b.start));
        }
    }
    Ok(())
}

/// One round: [`ROUND`] lookups of every stream.
///
/// # Safety
/// The caller guarantees the read and write margins of [`decode_streams`].
#[inline(always)]
unsafe fn round(multi: &[u64], src: &[u8], bit: &mut [usize; STREAMS], out: &mut [usize; STREAMS], high: &mut [u8]) {
    let (table, input, output) = (multi.as_ptr(), src.as_ptr(), high.as_mut_ptr());
    for _ in 0..ROUND {
        for k in 0..STREAMS {
            // SAFETY: in bounds by the caller's margins (see decode_streams).
            unsafe {
                let window = u64::from_le(input.add(bit[k] >> 3).cast::<u64>().read_unaligned()) >> (bit[k] & 7);
                let e = *table.add(window as usize & (MULTI_SIZE - 1));
                output.add(out[k]).cast::<u64>().write_unaligned(e.to_le());
                out[k] += entry_count(e);
                bit[k] += entry_bits(e);
            }
        }
    }
}
