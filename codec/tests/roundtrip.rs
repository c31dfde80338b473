//! The codec gives back every byte: fast decoder = reference twin = input, on weight-like,
//! uniform, constant and odd-length data; malformed bytes are errors, never panics.

use k3_codec::block::{decode_block_reference, Scratch};
use k3_codec::{
    decode_block, decode_block_summed, decode_layer, encode_block, encode_layer, BlockKind, CodecError, Directory,
    ALIGN, BLOCK_RAW,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// bf16 values near N(0, σ), as trained and synthetic trunk weights are.
fn weights(n_values: usize, sigma: f32, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(2 * n_values);
    for _ in 0..n_values {
        // Sum of uniforms: close enough to a normal for the exponent's spread.
        let x: f32 = (0..4).map(|_| rng.random::<f32>() - 0.5).sum::<f32>() * sigma * 1.7;
        out.extend_from_slice(&((x.to_bits() >> 16) as u16).to_le_bytes());
    }
    out
}

fn check_block(raw: &[u8]) -> BlockKind {
    let coded = encode_block(raw);
    let (mut fast, mut reference) = (vec![0u8; raw.len()], vec![0u8; raw.len()]);
    let mut scratch = Scratch::default();
    let kind = decode_block(&coded, &mut fast, &mut scratch).expect("fast decode");
    assert_eq!(decode_block_reference(&coded, &mut reference), Ok(kind));
    assert!(fast == raw, "fast decoder differs from the input ({} bytes)", raw.len());
    assert!(reference == raw, "reference decoder differs from the input");
    check_summed(&coded, raw, kind);
    kind
}

/// The summing decoder, into a 16-byte aligned output (streamed past the cache where whole
/// 4 KiB chunks allow) and into one that is not (the plain path): the same bytes, and the
/// CRC-32 of exactly those bytes.
fn check_summed(coded: &[u8], raw: &[u8], kind: BlockKind) {
    let mut backing = vec![0u8; raw.len() + 64];
    let aligned_at = backing.as_ptr().align_offset(16);
    for at in [aligned_at, aligned_at + 1] {
        let out = &mut backing[at..at + raw.len()];
        out.fill(0);
        let mut sum = crc32fast::Hasher::new();
        assert_eq!(decode_block_summed(coded, out, &mut Scratch::default(), &mut sum), Ok(kind));
        assert!(out == raw, "the summing decoder differs from the input ({} bytes at +{at})", raw.len());
        assert_eq!(sum.finalize(), crc32fast::hash(raw), "the sum covers exactly the decoded bytes");
    }
}

#[test]
fn weight_like_blocks_are_coded_and_come_back_exactly() {
    for (n, seed) in [(BLOCK_RAW / 2, 1), (1000, 2), (17, 3), (1, 4), (BLOCK_RAW / 2 - 3, 5)] {
        let raw = weights(n, 0.02, seed);
        let kind = check_block(&raw);
        if n >= 1000 {
            assert_eq!(kind, BlockKind::Huffman, "{n} weights");
        }
    }
}

#[test]
fn odd_lengths_constant_and_empty_blocks_come_back_exactly() {
    let mut raw = weights(4097, 0.5, 6);
    raw.push(0xab);
    check_block(&raw);
    assert_eq!(check_block(&vec![0x3c; 20_000]), BlockKind::Huffman);
    check_block(&[]);
    check_block(&[7]);
}

#[test]
fn incompressible_blocks_are_stored() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let raw: Vec<u8> = (0..100_000).map(|_| rng.random()).collect();
    assert_eq!(check_block(&raw), BlockKind::Stored);
}

#[test]
fn a_layer_is_aligned_smaller_and_exact() {
    let raw = weights(BLOCK_RAW + 12_345, 0.02, 8);
    let coded = encode_layer(&raw);
    assert_eq!(coded.bytes.len() % ALIGN, 0);
    assert_eq!(coded.blocks, 3);
    let ratio = coded.bytes.len() as f64 / raw.len() as f64;
    assert!(ratio < 0.70, "size ratio {ratio:.3}");
    assert!(decode_layer(&coded.bytes).expect("decode") == raw);
}

#[test]
fn damaged_layers_are_errors_and_never_panic() {
    let raw = weights(40_000, 0.02, 9);
    let coded = encode_layer(&raw).bytes;
    let truncated = decode_layer(&coded[..coded.len() - ALIGN]);
    assert!(matches!(truncated, Err(CodecError::Directory(ref m)) if m.contains("truncated")), "{truncated:?}");
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let (mut errors, mut wrong) = (0, 0);
    for _ in 0..2000 {
        let mut bad = coded.clone();
        let at = if rng.random::<bool>() { rng.random_range(0..28) } else { rng.random_range(ALIGN..ALIGN + 200) };
        bad[at] ^= 1 << rng.random_range(0..8);
        match decode_layer(&bad) {
            Err(_) => errors += 1,
            Ok(out) if out != raw => wrong += 1,
            Ok(_) => {}
        }
    }
    // Every byte flipped is one that matters (the directory's 28, a block's first 200).
    // Flips in the header, table and stream lengths are caught by the codec; flips in the
    // low bytes or code bits decode to other bytes, which the engine's CRC catches.
    assert!(errors > 1000, "{errors} of 2000 damaged layers refused");
    assert_eq!(errors + wrong, 2000, "{errors} refused + {wrong} decoded differently: a flip went unnoticed");
}

#[test]
fn a_layer_shares_codes_between_blocks_at_no_cost_in_size() {
    // 40 blocks of weights whose spread drifts a little from block to block.
    let raw: Vec<u8> = (0..40).flat_map(|b| weights(BLOCK_RAW / 2, 0.02 + 0.0001 * b as f32, 100 + b)).collect();
    let coded = encode_layer(&raw);
    assert_eq!(decode_layer(&coded.bytes).expect("decodes"), raw);
    let dir = Directory::read(&coded.bytes, coded.bytes.len()).expect("directory");
    let code_of = |i: usize| {
        let (at, _) = dir.blocks[i];
        coded.bytes[at + 8..at + 8 + 128].to_vec()
    };
    let changes = (1..dir.blocks.len()).filter(|&i| code_of(i) != code_of(i - 1)).count();
    assert!(changes <= 2, "{changes} code changes in 40 blocks (groups of 16 share one)");
    let own: usize = raw.chunks(BLOCK_RAW).map(|b| k3_codec::aligned(encode_block(b).len())).sum();
    let shared: usize = dir.blocks.iter().map(|&(_, len)| k3_codec::aligned(len)).sum();
    assert!(shared as f64 <= own as f64 * 1.005, "shared codes {shared} bytes vs each block's own {own}");
}
