//! The trunk codec (`k3_codec`): its fast decoder (the codec's `unsafe`: unchecked table
//! lookups and SSE2 streaming stores) against its plain reference twin, on coded bytes the
//! input damages.
//!
//! Input: byte 0 picks the case, the rest is data.
//! * even: the data is coded as a layer; it must decode back exactly. Then the last 8
//!   bytes of the data, read as four (offset, xor) pairs, damage the coded bytes: decoding
//!   must not panic, and each block's fast and reference decoders must agree (both refuse,
//!   or both give the same bytes).
//! * odd: the data is taken as a coded block as it is, of the raw length its bytes 4..8 say
//!   (at most 8 KiB, what 1 KiB codes at one bit a byte; the reference decodes bit by bit):
//!   the two decoders must agree.
#![no_main]

use k3_codec::block::{decode_block_reference, Scratch};
use k3_codec::{decode_block, decode_block_summed, decode_layer, encode_layer, Directory};
use libfuzzer_sys::fuzz_target;

/// Both decoders on one block of `raw_len` bytes.
fn same_verdict(coded: &[u8], raw_len: usize) {
    let (mut fast, mut reference) = (vec![0u8; raw_len], vec![0u8; raw_len]);
    let a = decode_block(coded, &mut fast, &mut Scratch::default());
    let b = decode_block_reference(coded, &mut reference);
    assert_eq!(a.is_ok(), b.is_ok(), "fast {a:?}, reference {b:?}");
    if a.is_ok() {
        assert!(fast == reference, "the decoders disagree on an accepted block");
        // The summing decoder (streaming stores where the output is aligned) gives the same
        // bytes and sums exactly them.
        let mut summed = vec![0u8; raw_len];
        let mut sum = crc32fast::Hasher::new();
        assert_eq!(decode_block_summed(coded, &mut summed, &mut Scratch::default(), &mut sum), a);
        assert!(summed == reference && sum.finalize() == crc32fast::hash(&reference), "the summing decoder");
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&case, data)) = input.split_first() else { return };
    if case % 2 == 1 {
        let raw_len = data.get(4..8).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        same_verdict(data, raw_len.min(1 << 13));
        return;
    }
    let coded = encode_layer(data);
    assert!(decode_layer(&coded.bytes).expect("a coded layer decodes") == data);
    let mut damaged = coded.bytes.clone();
    for pair in data.rchunks(2).take(4) {
        if let [at, xor] = pair {
            let at = (usize::from(*at) * 37) % damaged.len();
            damaged[at] ^= xor | 1;
        }
    }
    let _ = decode_layer(&damaged);
    if let Ok(dir) = Directory::read(&damaged, damaged.len()) {
        for (i, &(at, len)) in dir.blocks.iter().enumerate() {
            same_verdict(&damaged[at..at + len], dir.raw_range(i).len());
        }
    }
});
