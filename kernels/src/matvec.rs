//! Row-parallel matrix-vector and small batched products over any row format.
//!
//! Owns: splitting output rows across the current rayon pool. Each output is one call
//! of [`RowDot::row_dot`], so the thread count never changes a result. Depends on
//! `dot::widen` only: the row kernels come through `RowDot` (`Matrix` calls `dispatch`).
//! Must not: split a row's reduction, or make the batched path compute differently from
//! the single-vector path (prefill must equal token-by-token decoding bit for bit).

use rayon::prelude::*;

use crate::dot::widen;

/// Below this many weight elements a product runs on the calling thread.
const PARALLEL_MIN_ELEMS: usize = 1 << 15;
/// Target weight elements per parallel task.
const TASK_ELEMS: usize = 1 << 14;
/// Fewest rows per parallel task of a batched product: enough rows to reuse each cached
/// tile of activations.
const BATCH_ROWS_PER_TASK: usize = 32;
/// Most rows per parallel task of a batched product, and tasks per thread: each task streams
/// the tokens' activations through the cache once, so tasks are as large as balance allows,
/// up to 256 rows and [`BATCH_STATE_MAX`] of accumulators. A 3072×3584 MXFP4 matrix against
/// 64 tokens ran 4 % faster in 256-row tasks than in 32-row ones (one thread, medians of 3
/// alternated runs, docs/decisions/2026-12-06-batched-compute.md).
const BATCH_ROWS_MAX: usize = 256;
const BATCH_TASKS_PER_THREAD: usize = 4;
/// Most bytes of accumulators a task may hold (`RowDot::batch_state_bytes` per row and
/// token): a BF16 row keeps 16 f64 lanes per token, so 256-row tasks of 64 tokens held 2 MiB
/// each and raised the soak's peak RSS by 2.8 MB; 32 rows, as before, hold 256 KiB.
const BATCH_STATE_MAX: usize = 256 << 10;
/// Tokens of a batched product computed together: 64 tokens of K3's 7168-wide activation
/// are 3.7 MB as f64, within the last-level cache.
const MATMUL_TOKEN_GROUP: usize = 64;

/// A matrix whose rows can be dotted with an activation vector.
pub trait RowDot: Sync {
    /// Output rows.
    fn rows(&self) -> usize;
    /// Input width.
    fn cols(&self) -> usize;
    /// `Σ_i W[r][i]·x[i]` under the FP contract; `x` is the activation widened to f64.
    fn row_dot(&self, r: usize, x: &[f64]) -> f32;

    /// Rows `r..r+4` against `x`; each result must equal `row_dot` bit for bit. Formats
    /// override it to run four independent accumulation chains at once.
    fn row_dot4(&self, r: usize, x: &[f64]) -> [f32; 4] {
        [self.row_dot(r, x), self.row_dot(r + 1, x), self.row_dot(r + 2, x), self.row_dot(r + 3, x)]
    }

    /// Rows `first..first + out.len() / n_tokens` against every token of `xs`
    /// (`[n_tokens][cols]`), `out` laid out `[row][token]`; each result must equal `row_dot`
    /// bit for bit. Formats override it to block the product for the cache.
    fn rows_dot_batch(&self, first: usize, xs: &[f64], out: &mut [f32]) {
        rows_dot_batch_by_row(self, first, xs, out);
    }

    /// Bytes of accumulators [`RowDot::rows_dot_batch`] keeps per (row, token) while it
    /// runs: what a task of a batched product holds beside the inputs and outputs.
    fn batch_state_bytes(&self) -> usize {
        0
    }
}

/// [`RowDot::rows_dot_batch`] one (row, token) pair at a time through [`RowDot::row_dot`],
/// for formats without a blocked product.
pub fn rows_dot_batch_by_row(m: &(impl RowDot + ?Sized), first: usize, xs: &[f64], out: &mut [f32]) {
    let cols = m.cols().max(1);
    let n_tokens = (xs.len() / cols).max(1);
    for (k, per_token) in out.chunks_mut(n_tokens).enumerate() {
        for (o, x) in per_token.iter_mut().zip(xs.chunks_exact(cols)) {
            *o = m.row_dot(first + k, x);
        }
    }
}

fn rows_per_task(m: &impl RowDot) -> usize {
    (TASK_ELEMS / m.cols().max(1)).max(1)
}

/// `y = W·x`; `x.len() == cols`, `y.len() == rows`.
pub fn matvec_rows(m: &impl RowDot, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), m.cols(), "matvec input width");
    assert_eq!(y.len(), m.rows(), "matvec output height");
    let x = &widen(x)[..];
    if m.rows() * m.cols() < PARALLEL_MIN_ELEMS {
        fill_rows(m, 0, x, y);
        return;
    }
    let chunk = rows_per_task(m).next_multiple_of(4);
    y.par_chunks_mut(chunk).enumerate().for_each(|(c, ys)| fill_rows(m, c * chunk, x, ys));
}

/// `ys[k] = row (first + k) · x`, four rows at a time.
fn fill_rows(m: &impl RowDot, first: usize, x: &[f64], ys: &mut [f32]) {
    let done = ys.len() / 4 * 4;
    let mut quads = ys.chunks_exact_mut(4);
    for (q, out) in (&mut quads).enumerate() {
        out.copy_from_slice(&m.row_dot4(first + 4 * q, x));
    }
    for (k, out) in quads.into_remainder().iter_mut().enumerate() {
        *out = m.row_dot(first + done + k, x);
    }
}

/// Batched `Y[t] = W·X[t]` for `t < n_tokens`: `xs` is `[n_tokens][cols]`, `ys` is
/// `[n_tokens][rows]`. Each row's weights are visited once for all tokens.
pub fn matmul_rows(m: &impl RowDot, xs: &[f32], ys: &mut [f32]) {
    let (rows, cols) = (m.rows(), m.cols());
    assert!(cols > 0 && xs.len().is_multiple_of(cols), "matmul input width");
    let n_tokens = xs.len() / cols;
    assert_eq!(ys.len(), n_tokens * rows, "matmul output size");
    if n_tokens == 0 {
        return;
    }
    if n_tokens == 1 {
        return matvec_rows(m, xs, ys);
    }
    // Tokens in groups whose widened activations stay in the last-level cache while every
    // row block passes over them (a 512-token prefill chunk at once streamed 29 MB of
    // activations from memory per 32-row block and ran slower than 64-token chunks).
    for (g, group) in xs.chunks(MATMUL_TOKEN_GROUP * cols).enumerate() {
        let first = g * MATMUL_TOKEN_GROUP;
        matmul_group(m, group, &mut ys[first * rows..(first + group.len() / cols) * rows]);
    }
}

/// [`matmul_rows`] for one group of tokens (`xs` `[n][cols]` → `ys` `[n][rows]`).
fn matmul_group(m: &impl RowDot, xs: &[f32], ys: &mut [f32]) {
    let (rows, cols) = (m.rows(), m.cols());
    let n_tokens = xs.len() / cols;
    if rows * cols * n_tokens < PARALLEL_MIN_ELEMS {
        // Row-major [rows][n_tokens] staging, as below.
        let mut staged = vec![0.0f32; rows * n_tokens];
        m.rows_dot_batch(0, &widen(xs), &mut staged);
        transpose_into(&staged, n_tokens, ys);
        return;
    }
    // The widening and the transpose run on the pool too: on the calling thread alone they
    // held the second thread idle for a share of each group.
    let xs: Vec<f64> = xs.par_iter().map(|&v| f64::from(v)).collect();
    let xs = &xs[..];
    // Row-major [rows][n_tokens] staging so tasks own disjoint output chunks.
    let mut staged = vec![0.0f32; rows * n_tokens];
    let state_rows = BATCH_STATE_MAX / (m.batch_state_bytes() * n_tokens).max(1);
    let balanced =
        rows.div_ceil(rayon::current_num_threads() * BATCH_TASKS_PER_THREAD).min(BATCH_ROWS_MAX).min(state_rows);
    let chunk = rows_per_task(m).max(BATCH_ROWS_PER_TASK).max(balanced);
    staged.par_chunks_mut(chunk * n_tokens).enumerate().for_each(|(c, block)| m.rows_dot_batch(c * chunk, xs, block));
    ys.par_chunks_mut(rows).enumerate().for_each(|(t, out)| {
        for (r, o) in out.iter_mut().enumerate() {
            *o = staged[r * n_tokens + t];
        }
    });
}

/// `staged` (`[rows][n_tokens]`) into `ys` (`[n_tokens][rows]`).
fn transpose_into(staged: &[f32], n_tokens: usize, ys: &mut [f32]) {
    let rows = staged.len() / n_tokens;
    for (r, per_token) in staged.chunks(n_tokens).enumerate() {
        for (t, &v) in per_token.iter().enumerate() {
            ys[t * rows + r] = v;
        }
    }
}
