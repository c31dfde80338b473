//! The length-limited canonical Huffman code of a block's high bytes, and its decode tables.
//!
//! Owns: code lengths from symbol counts ([`code_lengths`], at most [`MAX_LEN`] bits, always a
//! complete code: a lone symbol gets a partner that is never emitted), the canonical codes
//! written bit-reversed ([`codes`]), the check a stored length table must pass
//! ([`check_lengths`]: complete, no length past [`MAX_LEN`]), and the decode tables
//! ([`DecodeTables`]: one lookup of [`MULTI_BITS`] bits gives up to [`MULTI_SYMBOLS`] symbols).
//! Easy to break: the multi-symbol entry layout ([`entry`]) is read by `fast.rs`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Longest code, and the width of a table lookup.
pub const MAX_LEN: u32 = 12;
/// Entries in a decode table.
pub const TABLE_SIZE: usize = 1 << MAX_LEN;

/// Code lengths (0 = symbol absent) of a complete prefix code for `counts`, none longer
/// than [`MAX_LEN`]. Rare symbols are made less rare until the limit holds, which costs
/// almost nothing in size.
pub fn code_lengths(counts: &[u64; 256]) -> [u8; 256] {
    let mut counts = *counts;
    let present = counts.iter().filter(|&&c| c > 0).count();
    if present == 0 {
        counts[0] = 1;
    }
    if present <= 1 {
        // A complete code needs two symbols: the partner is never emitted.
        let lone = counts.iter().position(|&c| c > 0).unwrap_or(0);
        counts[lone ^ 1] = 1;
    }
    loop {
        let lengths = unlimited_lengths(&counts);
        if lengths.iter().all(|&l| u32::from(l) <= MAX_LEN) {
            return lengths;
        }
        for c in counts.iter_mut().filter(|c| **c > 0) {
            *c = c.div_ceil(2);
        }
    }
}

/// Plain Huffman lengths: merge the two lightest trees until one is left.
fn unlimited_lengths(counts: &[u64; 256]) -> [u8; 256] {
    let mut heap = BinaryHeap::new();
    let mut parent: Vec<usize> = Vec::with_capacity(512);
    for (sym, &c) in counts.iter().enumerate() {
        if c > 0 {
            heap.push(Reverse((c, parent.len(), sym)));
            parent.push(usize::MAX);
        }
    }
    let leaves: Vec<usize> = (0..256).filter(|&s| counts[s] > 0).collect();
    while heap.len() > 1 {
        let (Some(Reverse((ca, a, _))), Some(Reverse((cb, b, _)))) = (heap.pop(), heap.pop()) else { break };
        let node = parent.len();
        parent.push(usize::MAX);
        parent[a] = node;
        parent[b] = node;
        heap.push(Reverse((ca + cb, node, 256)));
    }
    let mut lengths = [0u8; 256];
    for (leaf, &sym) in leaves.iter().enumerate() {
        let (mut depth, mut node) = (0u32, leaf);
        while parent[node] != usize::MAX {
            node = parent[node];
            depth += 1;
        }
        lengths[sym] = depth.min(255) as u8;
    }
    lengths
}

/// Why a stored length table cannot be a code this decoder accepts, if it cannot.
pub fn check_lengths(lengths: &[u8; 256]) -> Result<(), String> {
    let mut kraft: u64 = 0;
    for (sym, &l) in lengths.iter().enumerate() {
        if u32::from(l) > MAX_LEN {
            return Err(format!("symbol {sym} has a {l}-bit code (at most {MAX_LEN})"));
        }
        if l > 0 {
            kraft += 1 << (MAX_LEN - u32::from(l));
        }
    }
    if kraft != TABLE_SIZE as u64 {
        return Err(format!("the code lengths are not a complete prefix code (Kraft sum {kraft}/{TABLE_SIZE})"));
    }
    Ok(())
}

/// The canonical code of every symbol, bit-reversed for least-significant-first writing.
pub fn codes(lengths: &[u8; 256]) -> [u32; 256] {
    let mut order: Vec<usize> = (0..256).filter(|&s| lengths[s] > 0).collect();
    order.sort_by_key(|&s| (lengths[s], s));
    let mut codes = [0u32; 256];
    let (mut code, mut prev_len) = (0u32, 0u32);
    for &sym in &order {
        let len = u32::from(lengths[sym]);
        code <<= len - prev_len;
        codes[sym] = code.reverse_bits() >> (32 - len);
        code += 1;
        prev_len = len;
    }
    codes
}

/// Bits indexing the multi-symbol table: wider than [`MAX_LEN`], so one lookup yields more
/// symbols. Measured on k3-mid's trunk, one core, the whole decode (codes shared per 16
/// blocks): 12 bits 2.87 GB/s, 13 bits 3.17, 14 bits 3.08 (its 128 KiB table misses L1).
pub const MULTI_BITS: u32 = 13;
/// Entries in the multi-symbol table.
pub const MULTI_SIZE: usize = 1 << MULTI_BITS;
/// Most symbols one multi-symbol entry holds.
pub const MULTI_SYMBOLS: usize = 6;

/// A multi-symbol table entry: up to [`MULTI_SYMBOLS`] symbols (bytes 0..6), the bits they
/// take (bits 48..52) and how many there are (bits 56..59).
pub fn entry(symbols: &[u8], bits: u32) -> u64 {
    let mut e = 0u64;
    for (i, &s) in symbols.iter().enumerate() {
        e |= u64::from(s) << (8 * i);
    }
    e | u64::from(bits) << 48 | (symbols.len() as u64) << 56
}

/// The bits an entry's symbols take.
#[inline(always)]
pub fn entry_bits(e: u64) -> usize {
    ((e >> 48) & 15) as usize
}

/// How many symbols an entry holds.
#[inline(always)]
pub fn entry_count(e: u64) -> usize {
    (e >> 56) as usize
}

/// The two decode tables of one code.
pub struct DecodeTables {
    /// Indexed by the next [`MULTI_BITS`] bits: every whole symbol among them, up to
    /// [`MULTI_SYMBOLS`].
    pub multi: Vec<u64>,
    /// Indexed by the next [`MAX_LEN`] bits: the first symbol (low byte) and its length.
    pub single: Vec<u16>,
}

impl DecodeTables {
    /// Tables of a code that passed [`check_lengths`].
    pub fn new(lengths: &[u8; 256]) -> DecodeTables {
        let codes = codes(lengths);
        let mut single = vec![0u16; TABLE_SIZE];
        for sym in 0..256 {
            let len = u32::from(lengths[sym]);
            if len == 0 {
                continue;
            }
            let step = 1usize << len;
            let mut i = codes[sym] as usize;
            while i < TABLE_SIZE {
                single[i] = sym as u16 | (len as u16) << 8;
                i += step;
            }
        }
        let multi = (0..MULTI_SIZE).map(|i| multi_entry(&single, i)).collect();
        DecodeTables { multi, single }
    }
}

/// Every whole symbol (up to [`MULTI_SYMBOLS`]) in the [`MULTI_BITS`] bits `window`.
fn multi_entry(single: &[u16], window: usize) -> u64 {
    let mut symbols = [0u8; MULTI_SYMBOLS];
    let (mut n, mut used) = (0usize, 0u32);
    while n < MULTI_SYMBOLS {
        let s = single[(window >> used) & (TABLE_SIZE - 1)];
        let len = u32::from(s >> 8);
        if len == 0 || used + len > MULTI_BITS {
            break;
        }
        symbols[n] = s as u8;
        used += len;
        n += 1;
    }
    entry(&symbols[..n], used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_complete_and_limited_for_skewed_counts() {
        let mut counts = [0u64; 256];
        for (i, c) in counts.iter_mut().enumerate().take(40) {
            *c = 1u64 << (40 - i); // a geometric tail far past MAX_LEN unlimited
        }
        let lengths = code_lengths(&counts);
        assert_eq!(check_lengths(&lengths), Ok(()));
        assert_eq!(lengths.iter().map(|&l| u32::from(l)).max(), Some(MAX_LEN));
        assert_eq!(lengths[0], 1, "the commonest symbol keeps a one-bit code");
    }

    #[test]
    fn a_lone_symbol_still_gets_a_complete_code() {
        let mut counts = [0u64; 256];
        counts[77] = 1000;
        let lengths = code_lengths(&counts);
        assert_eq!(check_lengths(&lengths), Ok(()));
        assert_eq!((lengths[77], lengths[76]), (1, 1));
    }

    #[test]
    fn incomplete_or_too_long_tables_are_refused() {
        let mut lengths = [0u8; 256];
        lengths[0] = 1;
        assert!(check_lengths(&lengths).unwrap_err().contains("complete"));
        lengths[1] = 13;
        assert!(check_lengths(&lengths).unwrap_err().contains("13-bit"));
    }

    #[test]
    fn every_window_starts_with_the_symbol_whose_code_it_begins_with() {
        let mut counts = [0u64; 256];
        for (i, c) in [(0x3c, 500u64), (0xbc, 480), (0x3b, 200), (0xbb, 190), (0x3d, 60), (0x00, 1)] {
            counts[i] = c;
        }
        let lengths = code_lengths(&counts);
        let codes = codes(&lengths);
        let tables = DecodeTables::new(&lengths);
        for sym in [0x3cusize, 0xbc, 0x3b, 0xbb, 0x3d, 0x00] {
            let s = tables.single[codes[sym] as usize];
            assert_eq!((s as u8 as usize, u32::from(s >> 8)), (sym, u32::from(lengths[sym])));
            let e = tables.multi[codes[sym] as usize];
            assert_eq!(e as u8 as usize, sym);
            assert!(entry_count(e) >= 1 && entry_bits(e) >= usize::from(lengths[sym]));
        }
    }
}
