//! One block: up to [`crate::BLOCK_RAW`] raw bytes, coded or stored.
//!
//! Layout (little-endian): `kind: u8` (0 stored, 1 huffman), `streams: u8`, `0u16`,
//! `raw_len: u32`; a stored block's raw bytes follow. A Huffman block goes on with the code
//! lengths (256 nibbles, 128 bytes: symbol `2i` in the low nibble), `streams` stream byte
//! lengths (`u32` each), the low bytes (`raw_len / 2`, then the odd last byte if any) and
//! the streams. Stream `k` codes the high bytes of words `k·m .. (k+1)·m`, `m = ⌈words/streams⌉`.
//! Owns: choosing stored when coding would not shrink the block, and both decoders: the fast
//! one ([`decode_block`], through `fast.rs`) and the plain reference twin
//! ([`decode_block_reference`], one bit at a time) the tests compare it with.
//! Must not: accept a block whose stream does not end inside its stated length, whose
//! lengths do not add up to the block, or whose code is not complete.

pub use crate::bits::STREAMS;
use crate::bits::{peek, BitWriter};
use crate::fast::{decode_streams, StreamBounds};
use crate::huffman::{check_lengths, code_lengths, codes, DecodeTables};

/// How a block is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Stored = 0,
    Huffman = 1,
}

const HEADER: usize = 8;
const LENGTHS: usize = 128;

/// How a block will be coded, and its exact coded length (so a layer's blocks can be
/// written in place into one buffer, on every core).
#[derive(Debug, Clone)]
pub struct BlockPlan {
    pub kind: BlockKind,
    lengths: [u8; 256],
    stream_bytes: [usize; STREAMS],
    /// Coded bytes of the block.
    pub len: usize,
}

/// Plans `raw` (at most `u32::MAX` bytes): Huffman when that is smaller, stored otherwise.
pub fn plan_block(raw: &[u8]) -> BlockPlan {
    plan_block_sharing(raw, None)
}

/// How much larger than its own code's streams a block's streams may be under a code it
/// shares with its neighbours: one part in 200 (decoders keep the last code's tables, so a
/// shared code saves rebuilding them block after block).
const SHARED_SLACK: u64 = 200;

/// The high bytes' counts of `raw`'s little-endian words.
pub fn high_byte_counts(raw: &[u8]) -> [u64; 256] {
    let mut counts = [0u64; 256];
    for w in raw.chunks_exact(2) {
        counts[usize::from(w[1])] += 1;
    }
    counts
}

/// [`plan_block`], coding with `shared` (a code built for this block's neighbourhood)
/// instead of the block's own code when `shared` codes every symbol the block holds at most
/// one part in [`SHARED_SLACK`] larger.
pub fn plan_block_sharing(raw: &[u8], shared: Option<&[u8; 256]>) -> BlockPlan {
    let words = raw.len() / 2;
    let counts = high_byte_counts(raw);
    let cost = |lengths: &[u8; 256]| -> Option<u64> {
        (0..256).try_fold(0u64, |sum, s| match (counts[s], lengths[s]) {
            (0, _) => Some(sum),
            (_, 0) => None,
            (c, l) => Some(sum + c * u64::from(l)),
        })
    };
    let own = code_lengths(&counts);
    let own_bits = cost(&own).unwrap_or(u64::MAX);
    let lengths = match shared.and_then(|l| cost(l).map(|bits| (l, bits))) {
        Some((l, bits)) if bits <= own_bits + own_bits / SHARED_SLACK => *l,
        _ => own,
    };
    let stored = BlockPlan { kind: BlockKind::Stored, lengths, stream_bytes: [0; STREAMS], len: HEADER + raw.len() };
    let code_bits = cost(&lengths).unwrap_or(u64::MAX);
    let fixed = HEADER + LENGTHS + 4 * STREAMS + raw.len() - words;
    if (fixed + STREAMS) as u64 + code_bits / 8 >= stored.len as u64 {
        return stored;
    }
    let per_stream = words.div_ceil(STREAMS);
    let mut stream_bytes = [0usize; STREAMS];
    for (k, bytes) in stream_bytes.iter_mut().enumerate() {
        let (from, to) = ((k * per_stream).min(words), ((k + 1) * per_stream).min(words));
        let bits: usize = (from..to).map(|i| usize::from(lengths[usize::from(raw[2 * i + 1])])).sum();
        *bytes = bits.div_ceil(8);
    }
    let len = fixed + stream_bytes.iter().sum::<usize>();
    if len >= stored.len {
        return stored;
    }
    BlockPlan { kind: BlockKind::Huffman, lengths, stream_bytes, len }
}

/// Writes `raw` coded as `plan` says into `out` (exactly `plan.len` bytes).
pub fn write_block(raw: &[u8], plan: &BlockPlan, out: &mut [u8]) {
    let kind = plan.kind as u8;
    let streams = if plan.kind == BlockKind::Huffman { STREAMS as u8 } else { 0 };
    out[..4].copy_from_slice(&[kind, streams, 0, 0]);
    out[4..HEADER].copy_from_slice(&(raw.len() as u32).to_le_bytes());
    if plan.kind == BlockKind::Stored {
        out[HEADER..].copy_from_slice(raw);
        return;
    }
    let words = raw.len() / 2;
    let (lens_at, low_at) = (HEADER + LENGTHS, HEADER + LENGTHS + 4 * STREAMS);
    for (i, p) in plan.lengths.chunks_exact(2).enumerate() {
        out[HEADER + i] = p[0] | p[1] << 4;
    }
    for (k, &n) in plan.stream_bytes.iter().enumerate() {
        out[lens_at + 4 * k..lens_at + 4 * k + 4].copy_from_slice(&(n as u32).to_le_bytes());
    }
    for (o, w) in out[low_at..low_at + words].iter_mut().zip(raw.chunks_exact(2)) {
        *o = w[0];
    }
    let mut at = low_at + words;
    if raw.len() % 2 == 1 {
        out[at] = raw[raw.len() - 1];
        at += 1;
    }
    let codes = codes(&plan.lengths);
    let per_stream = words.div_ceil(STREAMS);
    for (k, &n) in plan.stream_bytes.iter().enumerate() {
        let (from, to) = ((k * per_stream).min(words), ((k + 1) * per_stream).min(words));
        let mut w = BitWriter::new(&mut out[at..at + n]);
        for i in from..to {
            let sym = usize::from(raw[2 * i + 1]);
            w.push(codes[sym], u32::from(plan.lengths[sym]));
        }
        w.finish();
        at += n;
    }
}

/// Codes `raw` as one block ([`plan_block`] then [`write_block`]).
pub fn encode_block(raw: &[u8]) -> Vec<u8> {
    let plan = plan_block(raw);
    let mut out = vec![0u8; plan.len];
    write_block(raw, &plan, &mut out);
    out
}

/// A Huffman block's parts, checked against each other and against `out_len`.
struct Parsed<'a> {
    lengths: [u8; 256],
    low: &'a [u8],
    tail: Option<u8>,
    streams: &'a [u8],
    bounds: [StreamBounds; STREAMS],
}

/// The kind of the block in `coded` and, for a Huffman block, its checked parts.
fn parse(coded: &[u8], out_len: usize) -> Result<(BlockKind, Option<Parsed<'_>>), String> {
    let head = coded.get(..HEADER).ok_or_else(|| format!("{} bytes: shorter than a block header", coded.len()))?;
    let raw_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if head[2] != 0 || head[3] != 0 {
        return Err("reserved header bytes are not zero".into());
    }
    if raw_len != out_len {
        return Err(format!("holds {raw_len} bytes where the directory says {out_len}"));
    }
    match head[0] {
        0 if coded.len() == HEADER + raw_len => Ok((BlockKind::Stored, None)),
        0 => Err(format!("a stored block of {raw_len} bytes in {} coded bytes", coded.len())),
        1 if usize::from(head[1]) == STREAMS => parse_huffman(coded, raw_len).map(|p| (BlockKind::Huffman, Some(p))),
        1 => Err(format!("{} streams (this decoder reads {STREAMS})", head[1])),
        k => Err(format!("unknown block kind {k}")),
    }
}

fn parse_huffman(coded: &[u8], raw_len: usize) -> Result<Parsed<'_>, String> {
    let words = raw_len / 2;
    let lens_at = HEADER + LENGTHS;
    let low_at = lens_at + 4 * STREAMS;
    let streams_at = low_at + raw_len - words;
    if coded.len() < streams_at {
        return Err(format!("truncated: {} bytes, the fixed part alone is {streams_at}", coded.len()));
    }
    let mut lengths = [0u8; 256];
    for (i, b) in coded[HEADER..lens_at].iter().enumerate() {
        lengths[2 * i] = b & 15;
        lengths[2 * i + 1] = b >> 4;
    }
    check_lengths(&lengths)?;
    let streams = &coded[streams_at..];
    let per_stream = words.div_ceil(STREAMS);
    let mut bounds = [StreamBounds::default(); STREAMS];
    let mut at = 0usize;
    for (k, b) in bounds.iter_mut().enumerate() {
        let field = &coded[lens_at + 4 * k..lens_at + 4 * k + 4];
        let len = u32::from_le_bytes([field[0], field[1], field[2], field[3]]) as usize;
        let (from, to) = ((k * per_stream).min(words), ((k + 1) * per_stream).min(words));
        *b = StreamBounds { start: at, end: at + len, out_start: from, out_end: to };
        at += len;
    }
    if at != streams.len() {
        return Err(format!("its streams take {at} bytes, the block holds {}", streams.len()));
    }
    let tail = (raw_len % 2 == 1).then(|| coded[streams_at - 1]);
    Ok(Parsed { lengths, low: &coded[low_at..low_at + words], tail, streams: &streams[..at], bounds })
}

/// What [`decode_block`] keeps from one block to the next: the high bytes between the stream
/// decode and the interleave, and the last code's tables (neighbouring blocks of a layer
/// mostly share a code, and building the tables costs ~8 % of a block's decode).
#[derive(Default)]
pub struct Scratch {
    high: Vec<u8>,
    code: Option<([u8; 256], DecodeTables)>,
}

impl Scratch {
    fn tables(&mut self, lengths: &[u8; 256]) -> &DecodeTables {
        if self.code.as_ref().is_none_or(|(l, _)| l != lengths) {
            self.code = Some((*lengths, DecodeTables::new(lengths)));
        }
        match &self.code {
            Some((_, tables)) => tables,
            None => unreachable!("set just above"),
        }
    }
}

/// Decodes the block in `coded` into `out` (its exact raw length), reusing `scratch` block
/// after block.
pub fn decode_block(coded: &[u8], out: &mut [u8], scratch: &mut Scratch) -> Result<BlockKind, String> {
    decode_block_into(coded, out, scratch, None)
}

/// [`decode_block`], adding the decoded bytes to `sum` as they are written (they are written
/// past the cache, so summing them afterwards would read them back from memory).
pub fn decode_block_summed(
    coded: &[u8],
    out: &mut [u8],
    scratch: &mut Scratch,
    sum: &mut crc32fast::Hasher,
) -> Result<BlockKind, String> {
    decode_block_into(coded, out, scratch, Some(sum))
}

fn decode_block_into(
    coded: &[u8],
    out: &mut [u8],
    scratch: &mut Scratch,
    sum: Option<&mut crc32fast::Hasher>,
) -> Result<BlockKind, String> {
    let (kind, parsed) = parse(coded, out.len())?;
    let Some(p) = parsed else {
        out.copy_from_slice(&coded[HEADER..HEADER + out.len()]);
        if let Some(sum) = sum {
            sum.update(out);
        }
        return Ok(kind);
    };
    let words = p.low.len();
    let mut high = std::mem::take(&mut scratch.high);
    high.clear();
    high.resize(words + 8, 0);
    let decoded = decode_streams(scratch.tables(&p.lengths), p.streams, &p.bounds, &mut high[..]);
    if decoded.is_ok() {
        let (body, tail) = out.split_at_mut(2 * words);
        if let Some(t) = p.tail {
            tail[0] = t;
        }
        interleave(p.low, &high[..words], body, sum, tail);
    }
    scratch.high = high;
    decoded?;
    Ok(kind)
}

/// `out[2i] = low[i]`, `out[2i + 1] = high[i]`, then the odd last byte `tail` (already in
/// place), all added to `sum` in order.
fn interleave(low: &[u8], high: &[u8], out: &mut [u8], mut sum: Option<&mut crc32fast::Hasher>, tail: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    let done = crate::simd::interleave_streaming(low, high, out, sum.as_deref_mut());
    #[cfg(target_arch = "aarch64")]
    let done = crate::simd_neon::interleave(low, high, out, sum.as_deref_mut());
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let done = 0;
    interleave_plain(&low[done..], &high[done..], &mut out[2 * done..]);
    if let Some(sum) = sum {
        sum.update(&out[2 * done..]);
        sum.update(tail);
    }
}

/// [`interleave`] in plain Rust, sixteen words at a time (vectorised by the compiler).
fn interleave_plain(low: &[u8], high: &[u8], out: &mut [u8]) {
    let whole = low.len() / 16 * 16;
    for ((o, l), h) in out[..2 * whole].chunks_exact_mut(32).zip(low.chunks_exact(16)).zip(high.chunks_exact(16)) {
        for i in 0..16 {
            o[2 * i] = l[i];
            o[2 * i + 1] = h[i];
        }
    }
    for i in whole..low.len() {
        out[2 * i] = low[i];
        out[2 * i + 1] = high[i];
    }
}

/// The reference twin of [`decode_block`]: the same checks, every symbol found one bit at
/// a time by walking the canonical code.
pub fn decode_block_reference(coded: &[u8], out: &mut [u8]) -> Result<BlockKind, String> {
    let (kind, parsed) = parse(coded, out.len())?;
    let Some(p) = parsed else {
        out.copy_from_slice(&coded[HEADER..HEADER + out.len()]);
        return Ok(kind);
    };
    let codes = codes(&p.lengths);
    for (k, b) in p.bounds.iter().enumerate() {
        let stream = &p.streams[b.start..b.end];
        let mut bitpos = 0usize;
        for i in b.out_start..b.out_end {
            let (sym, len) = (0..256)
                .filter(|&s| p.lengths[s] > 0)
                .find(|&s| {
                    let len = u32::from(p.lengths[s]);
                    peek(stream, bitpos) & ((1 << len) - 1) == codes[s] && bitpos + len as usize <= stream.len() * 8
                })
                .map(|s| (s, usize::from(p.lengths[s])))
                .ok_or_else(|| format!("stream {k} ends before word {i}"))?;
            out[2 * i] = p.low[i];
            out[2 * i + 1] = sym as u8;
            bitpos += len;
        }
        if stream.len() != bitpos.div_ceil(8) {
            return Err(format!("stream {k} has {} bytes but its codes take {bitpos} bits", stream.len()));
        }
    }
    if let Some(t) = p.tail {
        out[out.len() - 1] = t;
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::{interleave, interleave_plain};

    /// The dispatched interleave (SSE2 on x86-64, NEON on aarch64, plain elsewhere) writes
    /// exactly the plain twin's bytes and sums exactly them, in order, at every length
    /// around its 16-word steps and 2048-word chunks and at every output alignment.
    #[test]
    fn interleave_equals_its_plain_twin_and_sums_the_bytes_it_writes() {
        let mut seed = 7u32;
        let mut byte = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 24) as u8
        };
        for words in [0usize, 1, 15, 16, 17, 31, 33, 2047, 2048, 2049, 2 * 2048 + 16, 3 * 2048 + 5] {
            let low: Vec<u8> = (0..words).map(|_| byte()).collect();
            let high: Vec<u8> = (0..words).map(|_| byte()).collect();
            let tail = [byte()];
            let mut want = vec![0u8; 2 * words];
            interleave_plain(&low, &high, &mut want);
            let want_sum = crc32fast::hash(&[&want[..], &tail].concat());
            let mut backing = vec![0u8; 2 * words + 64];
            let aligned = backing.as_ptr().align_offset(64);
            for at in [aligned, aligned + 1, aligned + 8, aligned + 16] {
                let out = &mut backing[at..at + 2 * words];
                out.fill(0xAA);
                interleave(&low, &high, out, None, &tail);
                assert!(out == want.as_slice(), "{words} words at +{at}, no sum");
                out.fill(0x55);
                let mut sum = crc32fast::Hasher::new();
                interleave(&low, &high, out, Some(&mut sum), &tail);
                assert!(out == want.as_slice(), "{words} words at +{at}, summed");
                assert_eq!(sum.finalize(), want_sum, "{words} words at +{at}: the sum covers the bytes written");
            }
        }
    }
}
