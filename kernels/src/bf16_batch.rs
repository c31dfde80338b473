//! Cache-blocked product of a block of BF16 rows with a batch of tokens (prefill, verify
//! passes, batched decoding).
//!
//! Owns: the loop order of the batched BF16 product. Columns go in blocks and tokens in
//! tiles small enough that a tile's activations (as f64) and a block of rows' weights
//! stay in L2 while every row of the block passes over the tile; each (row, token) keeps
//! its 16 contract lanes across blocks,
//! fed in column order, and is finished once (tree, then the `cols % 16` tail), so the
//! result is the one-token kernel's bit for bit.
//! Must not: give a lane its elements out of column order, or round before the tail.
//! Easy to break: the strides — `w` is `[n_rows][cols]`, `xs` is `[n_tokens][cols]`, `out`
//! is `[n_rows][n_tokens]`; a column block must be a multiple of 16 so that lane `i % 16`
//! of the block is lane `i % 16` of the row.

use crate::dispatch::{bf16_accumulate_tokens, current, Isa};
use crate::dot::finish_dense_bf16;

/// Columns per block (a multiple of 16).
const BLOCK_COLS: usize = 1024;
/// Tokens per tile: 6 tokens × 1024 columns × 8 bytes = 48 KiB of activations in L2 (the
/// AVX2 body takes them three at a time). Measured on the 2-core Zen 1 host, a 3072×3584
/// matrix against 64 tokens in 32-row blocks, one thread: 12 × 256 gave 11.1–12.0 GFLOP/s,
/// 6 × 1024 13.0–13.1 (docs/decisions/2026-12-06-batched-compute.md).
const TILE_TOKENS: usize = 6;

/// `out[r][t] = row r · token t` for the BF16 rows `w` (`[n_rows][cols]`, raw bits) and
/// tokens `xs` (`[n_tokens][cols]`, widened to f64).
pub fn bf16_rows_batch(w: &[u16], cols: usize, xs: &[f64], out: &mut [f32]) {
    assert!(cols > 0 && w.len().is_multiple_of(cols), "BF16 batch rows");
    let (n_rows, n_tokens) = (w.len() / cols, xs.len() / cols);
    assert!(xs.len() == n_tokens * cols && out.len() == n_rows * n_tokens, "BF16 batch sizes");
    let full = cols / 16 * 16;
    let mut lanes = vec![[0.0f64; 16]; n_rows * n_tokens];
    let body = current();
    // The AVX-512 body multiplies matrices: two rows against four tokens per call.
    let (in_fours, in_pairs) = if body.isa() == Isa::Avx512 { (n_tokens / 4 * 4, n_rows / 2 * 2) } else { (0, 0) };
    for c0 in (0..full).step_by(BLOCK_COLS) {
        let c1 = (c0 + BLOCK_COLS).min(full);
        for t0 in (0..in_fours).step_by(4) {
            let x_tile = &xs[t0 * cols + c0..];
            for r in (0..in_pairs).step_by(2) {
                let spans = [&w[r * cols + c0..r * cols + c1], &w[(r + 1) * cols + c0..(r + 1) * cols + c1]];
                let (upto, next) = lanes.split_at_mut((r + 1) * n_tokens);
                let first = &mut upto[r * n_tokens + t0..][..4];
                body.bf16_rows2_tokens4(spans, x_tile, cols, [first, &mut next[t0..t0 + 4]]);
            }
            for r in in_pairs..n_rows {
                bf16_accumulate_tokens(
                    &w[r * cols + c0..r * cols + c1],
                    x_tile,
                    cols,
                    &mut lanes[r * n_tokens + t0..][..4],
                );
            }
        }
        for t0 in (in_fours..n_tokens).step_by(TILE_TOKENS) {
            let tile = (n_tokens - t0).min(TILE_TOKENS);
            let x_tile = &xs[t0 * cols + c0..];
            for r in 0..n_rows {
                let row_lanes = &mut lanes[r * n_tokens + t0..][..tile];
                bf16_accumulate_tokens(&w[r * cols + c0..r * cols + c1], x_tile, cols, row_lanes);
            }
        }
    }
    for (r, (per_row, row_lanes)) in out.chunks_mut(n_tokens).zip(lanes.chunks(n_tokens)).enumerate() {
        let w_tail = &w[r * cols + full..(r + 1) * cols];
        for (t, (o, l)) in per_row.iter_mut().zip(row_lanes).enumerate() {
            *o = finish_dense_bf16(l, w_tail, &xs[t * cols + full..(t + 1) * cols]);
        }
    }
}
