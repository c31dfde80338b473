//! Portable kernel bodies and the element helpers every body shares: the leaf of `kernels`.
//!
//! Owns: the lane layout and reduction tree of the FP contract (see `kernels` module
//! docs) written as the `<op>_<dtype>_portable` bodies (F32, BF16 and packed MXFP4 rows,
//! four BF16 rows, MXFP4 rows against several tokens), and the helpers the SIMD bodies
//! reuse: BF16 widening ([`bf16_to_f32`], [`bf16_to_f64`]), the E2M1 tables ([`E2M1`],
//! [`E2M1_F64_HIGH_WORDS`]), the E8M0 scale ([`e8m0_scale`]), the 16-lane tree
//! (`reduce16`) and activation widening ([`widen`]). MXFP4 is multiplied in packed form: a
//! nibble is decoded to its E2M1 value inside the loop, never into a widened row.
//! Must not: call the dispatcher or a SIMD body (this module imports nothing from
//! `kernels`: `dispatch` and the `simd_*` files depend on it, never the other way round),
//! allocate, or change the order of additions.
//! Easy to break: the low nibble of a packed byte is the EVEN element.

/// E2M1 values indexed by the 4-bit code (bit 3 is the sign), OCP MX FP4.
pub const E2M1: [f32; 16] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0];

/// The high 32 bits of each E2M1 value as f64, by 4-bit code (sign included): the SIMD
/// decodes look these up and leave the low word zero, which is exact because every E2M1
/// value has at most 2 significant bits (checked here at compile time).
pub const E2M1_F64_HIGH_WORDS: [u32; 16] = {
    let mut t = [0u32; 16];
    let mut n = 0;
    while n < 16 {
        let bits = (E2M1[n] as f64).to_bits();
        assert!(bits & 0xFFFF_FFFF == 0, "an E2M1 value needs its f64 low word");
        t[n] = (bits >> 32) as u32;
        n += 1;
    }
    t
};

/// Both E2M1 values of a packed byte, `(low nibble = even element, high = odd element)`,
/// as f64; built once at compile time.
const PAIR_LUT: [[f64; 2]; 256] = {
    let mut t = [[0.0f64; 2]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [E2M1[b & 15] as f64, E2M1[b >> 4] as f64];
        b += 1;
    }
    t
};

/// `2^(byte - 127)` for every E8M0 byte, with 255 (NaN in E8M0) mapped to 0; built once.
const E8M0: [f64; 256] = {
    let mut t = [0.0f64; 256];
    let mut b = 0;
    while b < 255 {
        // 2^(b - 127) built from its IEEE-754 bits: exponent field b - 127 + 1023.
        t[b] = f64::from_bits(((b as u64) + 1023 - 127) << 52);
        b += 1;
    }
    t
};

/// A BF16 value (raw bits) as f32: the 16 bits become the high half of the f32, exactly.
#[inline(always)]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// A BF16 value (raw bits) widened to f64, as the dense kernels accumulate it.
#[inline(always)]
pub fn bf16_to_f64(bits: u16) -> f64 {
    f64::from(bf16_to_f32(bits))
}

/// `2^(byte - 127)` as f64, with byte 255 (NaN in E8M0) mapped to 0.
#[inline(always)]
pub fn e8m0_scale(byte: u8) -> f64 {
    E8M0[byte as usize]
}

/// Reduces 16 lanes as the FP contract says.
#[inline(always)]
pub(crate) fn reduce16(a: &[f64; 16]) -> f64 {
    let b0 = (a[0] + a[4]) + (a[8] + a[12]);
    let b1 = (a[1] + a[5]) + (a[9] + a[13]);
    let b2 = (a[2] + a[6]) + (a[10] + a[14]);
    let b3 = (a[3] + a[7]) + (a[11] + a[15]);
    (b0 + b1) + (b2 + b3)
}

/// Dense dot product with the 16-lane contract; `widen` turns a weight element into f64.
#[inline(always)]
fn dot16<W: Copy>(w: &[W], x: &[f64], widen: impl Fn(W) -> f64) -> f32 {
    debug_assert_eq!(w.len(), x.len());
    let mut lanes = [0.0f64; 16];
    let mut wc = w.chunks_exact(16);
    let mut xc = x.chunks_exact(16);
    for (wb, xb) in (&mut wc).zip(&mut xc) {
        for l in 0..16 {
            lanes[l] += widen(wb[l]) * xb[l];
        }
    }
    let mut total = reduce16(&lanes);
    for (&wi, &xi) in wc.remainder().iter().zip(xc.remainder()) {
        total += widen(wi) * xi;
    }
    total as f32
}

/// Widens an activation vector once (exact): the kernels take f64 activations.
pub fn widen(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| f64::from(v)).collect()
}

/// Portable body of `dot_f32`: `Σ w[i]·x[i]` for an f32 row (activations already widened
/// to f64), `w.len() == x.len()`.
pub fn dot_f32_portable(w: &[f32], x: &[f64]) -> f32 {
    dot16(w, x, |v| v as f64)
}

/// Portable body of `dot_bf16`: `Σ w[i]·x[i]` for a BF16 row given as raw bits.
pub fn dot_bf16_portable(w: &[u16], x: &[f64]) -> f32 {
    dot16(w, x, bf16_to_f64)
}

/// Portable body of `dot_bf16_rows4`: four BF16 rows against one activation, each row
/// exactly `dot_bf16_portable`.
pub fn dot_bf16_rows4_portable(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    w.map(|row| dot_bf16_portable(row, x))
}

/// Portable body of `bf16_accumulate_tokens`: adds the full 16-element blocks of one BF16
/// row span `w` (`w.len()` a multiple of 16) to the 16 contract lanes of `lanes.len()`
/// tokens, token `k`'s activations for the span starting at `xs[k * x_stride]`: element
/// `i` of the span goes to lane `i % 16`, so a row summed span after span in column order
/// has, before its tail, the lanes [`dot_bf16_portable`] reduces.
pub fn bf16_accumulate_tokens_portable(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    debug_assert!(w.len().is_multiple_of(16));
    for (k, acc) in lanes.iter_mut().enumerate() {
        let x = &xs[k * x_stride..][..w.len()];
        for (wb, xb) in w.chunks_exact(16).zip(x.chunks_exact(16)) {
            for l in 0..16 {
                acc[l] += bf16_to_f64(wb[l]) * xb[l];
            }
        }
    }
}

/// A BF16 row's result from its 16 contract lanes: the lanes' tree, then the `len % 16`
/// tail (`w_tail`, `x_tail`) added in order, rounded to f32 once: how every dense body
/// finishes a row.
pub fn finish_dense_bf16(lanes: &[f64; 16], w_tail: &[u16], x_tail: &[f64]) -> f32 {
    let mut total = reduce16(lanes);
    for (&wj, &xj) in w_tail.iter().zip(x_tail) {
        total += bf16_to_f64(wj) * xj;
    }
    total as f32
}

/// Portable body of the FMA-rate probe `dispatch::fma_probe_f64`: `rounds` rounds of
/// twelve independent chains `a = a·m + c` (its result only keeps the work alive).
pub fn fma_probe_f64_portable(rounds: usize) -> f64 {
    let mut acc = [0.0f64; 12];
    for (k, a) in acc.iter_mut().enumerate() {
        *a = k as f64;
    }
    for _ in 0..rounds {
        for a in acc.iter_mut() {
            *a = *a * 0.999_999 + 1e-7;
        }
    }
    acc.iter().sum()
}

/// Portable body of `dot_mxfp4`: `Σ w[i]·x[i]` for one packed MXFP4 row,
/// `packed.len() == x.len() / 2`, `scales.len() == x.len() / 32`.
pub fn dot_mxfp4_portable(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    debug_assert_eq!(packed.len() * 2, x.len());
    debug_assert_eq!(scales.len() * 32, x.len());
    let mut total = 0.0f64;
    accumulate_row(packed, scales, x, &mut total);
    total as f32
}

/// Portable body of `mxfp4_accumulate_tokens`: adds groups `0..scales.len()` of one MXFP4
/// row to the running f64 totals of `totals.len()` tokens, token `k`'s activations
/// starting at `xs[k * x_stride]`, each token exactly as [`dot_mxfp4_portable`] sums it.
pub fn mxfp4_accumulate_tokens_portable(packed: &[u8], scales: &[u8], xs: &[f64], x_stride: usize, totals: &mut [f64]) {
    for (k, total) in totals.iter_mut().enumerate() {
        accumulate_row(packed, scales, &xs[k * x_stride..], total);
    }
}

/// Adds groups `0..scales.len()` of one packed MXFP4 row to a running f64 `total`, group
/// after group (`packed.len() == 16 · scales.len()`, `x` at least `32 · scales.len()` long):
/// the contract's unit, so a row may be summed in several group ranges in order.
fn accumulate_row(packed: &[u8], scales: &[u8], x: &[f64], total: &mut f64) {
    for ((group, xg), &scale) in packed.chunks_exact(16).zip(x.chunks_exact(32)).zip(scales) {
        if scale == 255 {
            continue;
        }
        let mut lanes = [0.0f64; 8];
        for (q, quad) in group.chunks_exact(4).enumerate() {
            // Bytes 4q..4q+4 hold elements 8q..8q+8: element 8q + 2b + h goes to lane 2b + h.
            for (b, &byte) in quad.iter().enumerate() {
                let [lo, hi] = PAIR_LUT[byte as usize];
                lanes[2 * b] += lo * xg[8 * q + 2 * b];
                lanes[2 * b + 1] += hi * xg[8 * q + 2 * b + 1];
            }
        }
        let b0 = lanes[0] + lanes[4];
        let b1 = lanes[1] + lanes[5];
        let b2 = lanes[2] + lanes[6];
        let b3 = lanes[3] + lanes[7];
        *total += ((b0 + b1) + (b2 + b3)) * e8m0_scale(scale);
    }
}

/// Portable body of the memory-read probe `dispatch::read_sum` (its rounding order is not
/// part of the FP contract).
pub fn read_sum_portable(data: &[f32]) -> f32 {
    data.chunks(64).map(|c| c.iter().sum::<f32>()).sum()
}

/// Dequantises one packed MXFP4 row into `out` (`out.len() == 2 · packed.len()`):
/// `E2M1[nibble] · 2^(scale − 127)`, exact in f32 for every scale byte but 255 (→ 0).
/// Used for inspection and tests; the kernels multiply the packed form directly.
pub fn decode_mxfp4_row(packed: &[u8], scales: &[u8], out: &mut [f32]) {
    for (i, pair) in out.chunks_exact_mut(2).enumerate() {
        let scale = e8m0_scale(scales[i / 16]);
        let [lo, hi] = PAIR_LUT[packed[i] as usize];
        pair[0] = (lo * scale) as f32;
        pair[1] = (hi * scale) as f32;
    }
}

/// Portable body of `dot_f32_queries`: every row of `rows` (`[n_rows][width]`) against
/// every query of `queries` (`[n_q][width]`, widened to f64), each pair exactly
/// [`dot_f32_portable`]; query `q`'s result for row `r` goes to `out[q * out_stride + r]`.
pub fn dot_f32_queries_portable(rows: &[f32], width: usize, queries: &[f64], out: &mut [f32], out_stride: usize) {
    for (q, query) in queries.chunks_exact(width).enumerate() {
        for (r, row) in rows.chunks_exact(width).enumerate() {
            out[q * out_stride + r] = dot_f32_portable(row, query);
        }
    }
}

/// Portable body of `accumulate_weighted_rows_f32`: for every accumulator `q` of `acc`
/// (`[n_q][width]`) and every row `r` of `rows` in order (`row_stride` floats apart, the
/// first `width` of each used), `acc[q][j] += weights[q * w_stride + r] · rows[r][j]`,
/// an f32 product then an f32 sum (never fused).
pub fn accumulate_weighted_rows_f32_portable(
    weights: &[f32],
    w_stride: usize,
    rows: &[f32],
    row_stride: usize,
    acc: &mut [f32],
    width: usize,
) {
    let n_rows = rows.len() / row_stride;
    for (q, a) in acc.chunks_exact_mut(width).enumerate() {
        let p = &weights[q * w_stride..q * w_stride + n_rows];
        for (&pr, row) in p.iter().zip(rows.chunks_exact(row_stride)) {
            for (aj, &vj) in a.iter_mut().zip(&row[..width]) {
                *aj += pr * vj;
            }
        }
    }
}

/// `acc[j] += w[j] · x` for an f32 row, in f64 (exact products): one row's share of a
/// transposed product, whose outputs each sum their rows in order.
pub fn accumulate_scaled_row_f32(w: &[f32], x: f64, acc: &mut [f64]) {
    for (a, &wj) in acc.iter_mut().zip(w) {
        *a += f64::from(wj) * x;
    }
}

/// `acc[j] += w[j] · x` for a BF16 row (raw bits), in f64: as
/// [`accumulate_scaled_row_f32`].
pub fn accumulate_scaled_row_bf16(w: &[u16], x: f64, acc: &mut [f64]) {
    for (a, &wj) in acc.iter_mut().zip(w) {
        *a += bf16_to_f64(wj) * x;
    }
}
