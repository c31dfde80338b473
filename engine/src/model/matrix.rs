//! `Matrix`: a weight matrix in its checkpoint format, the model's only door to kernels.
//!
//! Owns: the three storage formats (F32, BF16 bits, packed MXFP4 with E8M0 scales) and
//! their row dot products. Matrices are `[out = rows, in = cols]`, row-major.
//! Must not: widen a BF16 or MXFP4 matrix into f32 storage.
//! Easy to break: MXFP4 `cols` is the LOGICAL width; `packed` holds `cols / 2` bytes and
//! `scales` `cols / 32` bytes per row.

use crate::io::ByteView;
use crate::kernels::{self, RowDot};

/// Storage of one weight matrix: little-endian checkpoint bytes, in place (a resident
/// tensor's own blob, a ring slot or an expert-cache slot). F32 and BF16 views are
/// aligned for their element type by the binder.
#[derive(Debug, Clone)]
pub enum MatrixData {
    /// Plain f32 values, `[rows][cols]`.
    F32(ByteView),
    /// BF16 bit patterns, `[rows][cols]`.
    Bf16(ByteView),
    /// MXFP4: `packed` `[rows][cols/2]` (low nibble = even element), `scales` `[rows][cols/32]`.
    Mxfp4 { packed: ByteView, scales: ByteView },
}

/// The typed elements of an aligned view (the binder guarantees alignment and length).
fn elems<T: bytemuck::Pod>(v: &ByteView) -> &[T] {
    v.typed().expect("matrix views are aligned and whole by construction (bind.rs)")
}

/// A bound weight matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: MatrixData,
}

impl Matrix {
    /// Wraps data whose length the binder has already checked against `rows × cols`.
    pub(crate) fn new(rows: usize, cols: usize, data: MatrixData) -> Matrix {
        Matrix { rows, cols, data }
    }

    /// Output rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Input width (logical, also for MXFP4).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// A short name of the storage format, for logs and errors.
    pub fn format_name(&self) -> &'static str {
        match self.data {
            MatrixData::F32(_) => "F32",
            MatrixData::Bf16(_) => "BF16",
            MatrixData::Mxfp4 { .. } => "MXFP4",
        }
    }

    /// `y = W·x`.
    pub fn matvec(&self, x: &[f32], y: &mut [f32]) {
        kernels::matvec_rows(self, x, y);
    }

    /// `Y[t] = W·X[t]` for a batch of tokens laid out `[n][cols]` → `[n][rows]`.
    pub fn matmul(&self, xs: &[f32], ys: &mut [f32]) {
        kernels::matmul_rows(self, xs, ys);
    }

    /// Row `r` widened (or dequantised) to f32: the embedding lookup.
    pub fn row_f32(&self, r: usize, out: &mut [f32]) {
        let span = r * self.cols..(r + 1) * self.cols;
        match &self.data {
            MatrixData::F32(v) => out.copy_from_slice(&elems::<f32>(v)[span]),
            MatrixData::Bf16(v) => {
                for (o, &b) in out.iter_mut().zip(&elems::<u16>(v)[span]) {
                    *o = kernels::bf16_to_f32(b);
                }
            }
            MatrixData::Mxfp4 { packed, scales } => {
                let p = &packed.bytes()[r * self.cols / 2..(r + 1) * self.cols / 2];
                let s = &scales.bytes()[r * self.cols / 32..(r + 1) * self.cols / 32];
                kernels::decode_mxfp4_row(p, s, out);
            }
        }
    }

    /// `out[j] = Σ_i W[first + i][j] · x[i]` over the `x.len()` rows from `first`: those
    /// rows transposed, against `x` (`out.len() == cols`). Each output sums its rows in
    /// order in f64 (every product exact) and rounds to f32 once, so the result does not
    /// depend on how the columns are vectorised.
    pub fn transposed_rows_matvec(&self, first: usize, x: &[f32], out: &mut [f32]) {
        assert_eq!(out.len(), self.cols, "transposed product output width");
        assert!(first + x.len() <= self.rows, "transposed product rows");
        let c = self.cols;
        let mut acc = vec![0.0f64; c];
        let mut decoded = Vec::new();
        for (i, &xi) in x.iter().enumerate() {
            let (r, xi) = (first + i, f64::from(xi));
            match &self.data {
                MatrixData::F32(v) => {
                    kernels::dot::accumulate_scaled_row_f32(&elems::<f32>(v)[r * c..(r + 1) * c], xi, &mut acc)
                }
                MatrixData::Bf16(v) => {
                    kernels::dot::accumulate_scaled_row_bf16(&elems::<u16>(v)[r * c..(r + 1) * c], xi, &mut acc)
                }
                MatrixData::Mxfp4 { .. } => {
                    decoded.resize(c, 0.0);
                    self.row_f32(r, &mut decoded);
                    kernels::dot::accumulate_scaled_row_f32(&decoded, xi, &mut acc);
                }
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = a as f32;
        }
    }

    /// The buffer a dense matrix is a view of, for reuse once the matrix is gone (`None`
    /// for MXFP4, whose two views are never pooled).
    pub(crate) fn into_blob(self) -> Option<std::sync::Arc<crate::io::Blob>> {
        match self.data {
            MatrixData::F32(v) | MatrixData::Bf16(v) => Some(v.blob()),
            MatrixData::Mxfp4 { .. } => None,
        }
    }

    /// Bytes of weight storage.
    pub fn nbytes(&self) -> usize {
        match &self.data {
            MatrixData::F32(v) | MatrixData::Bf16(v) => v.len(),
            MatrixData::Mxfp4 { packed, scales } => packed.len() + scales.len(),
        }
    }
}

impl RowDot for Matrix {
    fn row_dot4(&self, r: usize, x: &[f64]) -> [f32; 4] {
        let c = self.cols;
        match &self.data {
            MatrixData::Bf16(v) => {
                let w = elems::<u16>(v);
                kernels::dot_bf16_rows4([0, 1, 2, 3].map(|k| &w[(r + k) * c..(r + k + 1) * c]), x)
            }
            _ => [self.row_dot(r, x), self.row_dot(r + 1, x), self.row_dot(r + 2, x), self.row_dot(r + 3, x)],
        }
    }

    fn rows_dot_batch(&self, first: usize, xs: &[f64], out: &mut [f32]) {
        let c = self.cols;
        match &self.data {
            MatrixData::Mxfp4 { packed, scales } => {
                let n_rows = out.len() / (xs.len() / c).max(1);
                let rows = first..first + n_rows;
                kernels::mxfp4_batch::mxfp4_rows_batch(
                    &packed.bytes()[rows.start * c / 2..rows.end * c / 2],
                    &scales.bytes()[rows.start * c / 32..rows.end * c / 32],
                    c,
                    xs,
                    out,
                )
            }
            MatrixData::Bf16(v) => {
                let n_rows = out.len() / (xs.len() / c).max(1);
                kernels::bf16_batch::bf16_rows_batch(&elems::<u16>(v)[first * c..(first + n_rows) * c], c, xs, out)
            }
            MatrixData::F32(_) => kernels::matvec::rows_dot_batch_by_row(self, first, xs, out),
        }
    }

    fn batch_state_bytes(&self) -> usize {
        match &self.data {
            // The MXFP4 body's f64 total per (row, token); BF16 keeps 16 f64 lanes.
            MatrixData::Mxfp4 { .. } => 8,
            MatrixData::Bf16(_) => 128,
            MatrixData::F32(_) => 0,
        }
    }

    fn rows(&self) -> usize {
        self.rows
    }
    fn cols(&self) -> usize {
        self.cols
    }
    #[inline]
    fn row_dot(&self, r: usize, x: &[f64]) -> f32 {
        let c = self.cols;
        match &self.data {
            MatrixData::F32(v) => kernels::dot_f32(&elems::<f32>(v)[r * c..(r + 1) * c], x),
            MatrixData::Bf16(v) => kernels::dot_bf16(&elems::<u16>(v)[r * c..(r + 1) * c], x),
            MatrixData::Mxfp4 { packed, scales } => kernels::dot_mxfp4(
                &packed.bytes()[r * c / 2..(r + 1) * c / 2],
                &scales.bytes()[r * c / 32..(r + 1) * c / 32],
                x,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A matrix gives each token of a batch what it gives the token alone, bit for bit, on
    /// the parallel path (row blocks on several threads); the kernels' own twins are
    /// `k3-kernels`' `twins` test.
    #[test]
    fn a_bf16_matrix_gives_each_token_of_a_batch_what_it_gives_the_token_alone() {
        let m = crate::advanced::bench::random_bf16(300, 1031, 24);
        let mut rng = ChaCha8Rng::seed_from_u64(25);
        for n_tokens in [2usize, 7, 64] {
            let xs: Vec<f32> = (0..n_tokens * 1031).map(|_| rng.random_range(-2.0f32..2.0)).collect();
            let mut batched = vec![0.0f32; n_tokens * 300];
            m.matmul(&xs, &mut batched);
            for t in 0..n_tokens {
                let mut single = vec![0.0f32; 300];
                m.matvec(&xs[t * 1031..(t + 1) * 1031], &mut single);
                let same = batched[t * 300..(t + 1) * 300].iter().zip(&single).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "token {t} of {n_tokens}");
            }
        }
    }
}
