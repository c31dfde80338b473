//! Cache-blocked product of a block of packed MXFP4 rows with a batch of tokens (prefill).
//!
//! Owns: the loop order of the batched MXFP4 product. Tokens go in tiles of 32 and each
//! row's groups in blocks small enough that a tile's activations (32 tokens × a block of
//! groups, as f64) stay in the L2 cache while every row of the block passes over them; each
//! (row, token) keeps a running f64 total that receives its groups in order, so the result
//! is the one-token kernel's bit for bit (the contract allows a row to be summed in group
//! ranges, in order — see `dot::mxfp4_accumulate_tokens_portable`).
//! Must not: reorder groups within a row, or convert a total to f32 before its last group.
//! Easy to break: the strides — `xs` is `[n_tokens][cols]`, the rows' bytes are contiguous
//! `[n_rows][cols / 2]` and `[n_rows][cols / 32]`, `out` is `[n_rows][n_tokens]`.

use crate::dispatch::{current, mxfp4_accumulate_tokens, Isa};

/// Tokens per tile: each group's decode serves this many tokens (the AVX2 body reduces
/// them in pairs, the AVX-512 body in eights). Measured on the 2-core Zen 1 host, a
/// 3072×3584 expert matrix against 64 tokens in 32-row blocks, one thread: tiles of 8
/// (24 KiB) 9.5–9.8 GFLOP/s, of 32 (96 KiB) 10.3–10.9 (docs/decisions/2026-12-06-batched-compute.md).
const TILE_TOKENS: usize = 32;
/// Bytes of f64 activations per tile (tokens × block of groups), sized to stay in L2.
const TILE_X_BYTES: usize = 96 * 1024;
/// Groups per block: 12 for 32 tokens (32 · 12 · 32 · 8 B = 96 KiB).
const BLOCK_GROUPS: usize = TILE_X_BYTES / (TILE_TOKENS * 32 * 8);

/// `out[r][t] = row r · token t` for the rows whose packed bytes and scales are `packed`
/// and `scales` (each row `cols / 2` and `cols / 32` bytes) and tokens `xs` (`[n][cols]`,
/// widened to f64).
pub fn mxfp4_rows_batch(packed: &[u8], scales: &[u8], cols: usize, xs: &[f64], out: &mut [f32]) {
    assert!(cols > 0 && cols.is_multiple_of(32), "MXFP4 width {cols} is not a multiple of 32");
    let groups = cols / 32;
    let n_rows = scales.len() / groups;
    let n_tokens = xs.len() / cols;
    assert!(packed.len() == n_rows * cols / 2 && scales.len() == n_rows * groups, "MXFP4 block sizes");
    assert!(xs.len() == n_tokens * cols && out.len() == n_rows * n_tokens, "MXFP4 batch sizes");
    let mut totals = vec![0.0f64; n_rows * n_tokens];
    let body = current();
    // The AVX-512 body multiplies matrices: four tokens in registers against every row.
    let in_fours = if body.isa() == Isa::Avx512 { n_tokens / 4 * 4 } else { 0 };
    let mut four = vec![0.0f64; 4 * n_rows];
    for t0 in (0..in_fours).step_by(4) {
        four.fill(0.0);
        body.mxfp4_rows_tokens4(packed, scales, groups, &xs[t0 * cols..], cols, &mut four);
        for (r, row) in four.chunks_exact(4).enumerate() {
            totals[r * n_tokens + t0..][..4].copy_from_slice(row);
        }
    }
    for t0 in (in_fours..n_tokens).step_by(TILE_TOKENS) {
        let tile = (n_tokens - t0).min(TILE_TOKENS);
        for g0 in (0..groups).step_by(BLOCK_GROUPS) {
            let g1 = (g0 + BLOCK_GROUPS).min(groups);
            let x_tile = &xs[t0 * cols + 32 * g0..];
            for r in 0..n_rows {
                let (first, last) = (r * groups + g0, r * groups + g1);
                let row_totals = &mut totals[r * n_tokens + t0..][..tile];
                mxfp4_accumulate_tokens(&packed[16 * first..16 * last], &scales[first..last], x_tile, cols, row_totals);
            }
        }
    }
    for (o, &t) in out.iter_mut().zip(&totals) {
        *o = t as f32;
    }
}
