//! NEON bodies of the dense kernels and probes for aarch64, bit-identical to the portable
//! ones in `dot.rs` (the MXFP4 bodies are in `mxfp4_neon.rs`).
//!
//! Owns: the 128-bit SIMD `unsafe` of the dense bodies on aarch64: `dot_f32`, `dot_bf16`,
//! `dot_bf16_rows4`, `bf16_accumulate_tokens`, `dot_f32_queries`,
//! `accumulate_weighted_rows_f32`, `fma_probe_f64` and `read_sum`, named after the kernel
//! they implement and visible only to `kernels`, whose `dispatch` calls them. Depends on
//! the leaf `dot` only. A `float64x2_t` holds two f64, so the contract's 16 dense lanes
//! take eight accumulators: `acc[k]` holds lanes `2k..2k+2`; element `i` of every full
//! 16-block goes to lane `i % 16`; the lanes are stored and reduced by the portable
//! `reduce16`; the `len % 16` tail is added sequentially afterwards.
//!
//! Products of an f32/BF16 weight by an f32 activation are exact in f64, so the fused
//! multiply-adds (`vfmaq_f64`) round exactly like the portable multiply-then-add. The one
//! f32 kernel, `accumulate_weighted_rows_f32`, is NOT exact that way: it multiplies
//! (`vmulq_f32`) and then adds (`vaddq_f32`), as the portable body rounds twice.
//! Must not: be called except through a `dispatch::DetectedIsa` for `Isa::Neon` (only
//! runtime detection of NEON makes one), call the dispatcher, reorder any addition, give a
//! register lane more than one contract lane, or fuse the f32 product and sum of
//! `accumulate_weighted_rows_f32` (`vfmaq_f32` would change its bits).
//! Easy to break: the BF16 widening: a 16-bit value zipped ABOVE a zero half-word (zero
//! first in `vzip1q_u16(zero, v)`) is its f32; the other order gives garbage, not a crash.

use std::arch::aarch64::*;

use crate::dot::{bf16_to_f64, reduce16};

/// The 16 dense contract lanes of one row (and token): `acc[k]` holds lanes `2k..2k+2`.
type Lanes16 = [float64x2_t; 8];

/// Eight zeroed accumulators.
#[target_feature(enable = "neon")]
#[inline]
fn zero16() -> Lanes16 {
    [vdupq_n_f64(0.0); 8]
}

/// Reduces eight 2-lane accumulators with the contract's 16-lane tree.
#[target_feature(enable = "neon")]
#[inline]
fn finish16(acc: &Lanes16) -> f64 {
    let mut lanes = [0.0f64; 16];
    for (k, a) in acc.iter().enumerate() {
        // SAFETY: `lanes` holds 16 f64 and 2k + 2 <= 16; NEON stores need no alignment.
        unsafe { vst1q_f64(lanes.as_mut_ptr().add(2 * k), *a) };
    }
    reduce16(&lanes)
}

/// `acc[k] += w[k] · x[i + 2k .. i + 2k + 2]` for the eight vectors of one 16-block.
///
/// # Safety
/// The CPU must support NEON; `x + 16` must stay within the activation.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn fma16(acc: &mut Lanes16, w: &Lanes16, x: *const f64) {
    for (k, (a, wk)) in acc.iter_mut().zip(w).enumerate() {
        // SAFETY: x + 2k + 2 <= x + 16, in bounds per the caller.
        let xk = unsafe { vld1q_f64(x.add(2 * k)) };
        *a = vfmaq_f64(*a, *wk, xk);
    }
}

/// Sixteen f32 weights at `p` widened (exactly) to f64, two per vector, in element order.
///
/// # Safety
/// The CPU must support NEON; `p` must point at 16 readable `f32`.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn f32x16(p: *const f32) -> Lanes16 {
    let mut out = zero16();
    for (k, pair) in out.chunks_exact_mut(2).enumerate() {
        // SAFETY: p + 4k + 4 <= p + 16, readable per the caller; unaligned load.
        let v = unsafe { vld1q_f32(p.add(4 * k)) };
        pair[0] = vcvt_f64_f32(vget_low_f32(v));
        pair[1] = vcvt_high_f64_f32(v);
    }
    out
}

/// Sixteen BF16 weights at `p` widened to f64, two per vector, in element order: each
/// 16-bit value zipped above a zero half-word becomes the high half of a 32-bit lane, which
/// is its f32, then widened exactly to f64.
///
/// # Safety
/// The CPU must support NEON; `p` must point at 16 readable `u16`.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn bf16x16(p: *const u16) -> Lanes16 {
    let zero = vdupq_n_u16(0);
    let mut out = zero16();
    for (h, quad) in out.chunks_exact_mut(4).enumerate() {
        // SAFETY: p + 8h + 8 <= p + 16, readable per the caller; unaligned load.
        let v = unsafe { vld1q_u16(p.add(8 * h)) };
        let (lo, hi) = (vreinterpretq_f32_u16(vzip1q_u16(zero, v)), vreinterpretq_f32_u16(vzip2q_u16(zero, v)));
        quad[0] = vcvt_f64_f32(vget_low_f32(lo));
        quad[1] = vcvt_high_f64_f32(lo);
        quad[2] = vcvt_f64_f32(vget_low_f32(hi));
        quad[3] = vcvt_high_f64_f32(hi);
    }
    out
}

/// Dense 16-lane dot product: `load16(i)` returns weights `i..i+16` as eight f64 vectors
/// (elements `i+2k..i+2k+2` in vector `k`), `tail(j)` weight `j` as f64.
///
/// # Safety
/// The CPU must support NEON; `load16(i)` must read in bounds whenever
/// `i + 16 <= x.len()`.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn dot16_neon(x: &[f64], load16: impl Fn(usize) -> Lanes16, tail: impl Fn(usize) -> f64) -> f32 {
    let full = x.len() / 16 * 16;
    let mut acc = zero16();
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 <= full <= x.len().
        unsafe { fma16(&mut acc, &load16(i), x.as_ptr().add(i)) };
        i += 16;
    }
    let mut total = finish16(&acc);
    for (j, &xj) in x.iter().enumerate().skip(full) {
        total += tail(j) * xj;
    }
    total as f32
}

/// NEON twin of `dot_f32_portable`.
///
/// # Safety
/// The CPU must support NEON, and `w.len() == x.len()`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_f32(w: &[f32], x: &[f64]) -> f32 {
    debug_assert_eq!(w.len(), x.len());
    // SAFETY: reads w[i..i+16], in bounds because i + 16 <= x.len() == w.len().
    let load = |i: usize| unsafe { f32x16(w.as_ptr().add(i)) };
    // SAFETY: NEON per caller; the loader stays in bounds (see above).
    unsafe { dot16_neon(x, load, |j| f64::from(w[j])) }
}

/// NEON twin of `dot_bf16_portable`.
///
/// # Safety
/// The CPU must support NEON, and `w.len() == x.len()`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_bf16(w: &[u16], x: &[f64]) -> f32 {
    debug_assert_eq!(w.len(), x.len());
    // SAFETY: reads w[i..i+16] with i + 16 <= x.len() == w.len().
    let load = |i: usize| unsafe { bf16x16(w.as_ptr().add(i)) };
    // SAFETY: NEON per caller; the loader stays in bounds.
    unsafe { dot16_neon(x, load, |j| bf16_to_f64(w[j])) }
}

/// Columns per step of `dot_bf16_rows4`: rows 0-1 then rows 2-3 run over this many
/// elements before moving on, so all four weight rows stream from memory together (as the
/// AVX2 body does, for the same reason).
const ROWS4_SPAN: usize = 64;

/// Elements `i..end` (`i`, `end` multiples of 16) of two BF16 rows into their 16-lane
/// accumulators, exactly as `dot16_neon` would, sharing the activation loads.
///
/// # Safety
/// The CPU must support NEON; `end <= x.len()` and both rows have `x.len()` elements.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn bf16_rows2_span(w: [&[u16]; 2], x: &[f64], mut i: usize, end: usize, acc: &mut [Lanes16; 2]) {
    let (mut a0, mut a1) = (acc[0], acc[1]);
    while i < end {
        // SAFETY: i + 16 <= end <= x.len(), the length of x and of both rows.
        unsafe {
            let xp = x.as_ptr().add(i);
            fma16(&mut a0, &bf16x16(w[0].as_ptr().add(i)), xp);
            fma16(&mut a1, &bf16x16(w[1].as_ptr().add(i)), xp);
        }
        i += 16;
    }
    *acc = [a0, a1];
}

/// Four BF16 rows against one activation, each bit-identical to `dot_bf16`: two rows at a
/// time (sixteen accumulators) over a span of `ROWS4_SPAN` columns, the other pair's
/// accumulators parked in memory. Every lane still receives its elements in column order,
/// so the split changes no rounding.
///
/// # Safety
/// The CPU must support NEON; every row has `x.len()` elements.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_bf16_rows4(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    debug_assert!(w.iter().all(|r| r.len() == x.len()));
    let full = x.len() / 16 * 16;
    let mut acc = [[zero16(); 2]; 2];
    let mut i = 0;
    while i < full {
        let end = (i + ROWS4_SPAN).min(full);
        for (pair, acc_pair) in acc.iter_mut().enumerate() {
            // SAFETY: NEON per caller; i and end are multiples of 16 with end <= x.len().
            unsafe { bf16_rows2_span([w[2 * pair], w[2 * pair + 1]], x, i, end, acc_pair) };
        }
        i = end;
    }
    let mut out = [0.0f32; 4];
    for ((o, acc_r), row) in out.iter_mut().zip(acc.iter().flatten()).zip(w) {
        let mut total = finish16(acc_r);
        for (&wj, &xj) in row.iter().zip(x).skip(full) {
            total += bf16_to_f64(wj) * xj;
        }
        *o = total as f32;
    }
    out
}

/// Adds one BF16 row span to the 16 lanes of `T` tokens at once: each 16-element block is
/// widened once and fed to the `8·T` accumulators, exactly as `dot16_neon` feeds one
/// token's.
///
/// # Safety
/// The CPU must support NEON; `w.len()` is a multiple of 16 and every token's span
/// `xs[k * x_stride..][..w.len()]` (`k < T`) is in bounds.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn bf16_span_tokens<const T: usize>(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    debug_assert!(lanes.len() == T && w.len().is_multiple_of(16));
    let mut acc = [zero16(); T];
    for (a, l) in acc.iter_mut().zip(lanes.iter()) {
        for (j, aj) in a.iter_mut().enumerate() {
            // SAFETY: each token's lanes are 16 f64 and 2j + 2 <= 16.
            *aj = unsafe { vld1q_f64(l.as_ptr().add(2 * j)) };
        }
    }
    let mut i = 0;
    while i < w.len() {
        // SAFETY: i + 16 <= w.len().
        let wv = unsafe { bf16x16(w.as_ptr().add(i)) };
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: token k's span holds w.len() >= i + 16 elements from k * x_stride.
            unsafe { fma16(a, &wv, xs.as_ptr().add(k * x_stride + i)) };
        }
        i += 16;
    }
    for (a, l) in acc.iter().zip(lanes.iter_mut()) {
        for (j, aj) in a.iter().enumerate() {
            // SAFETY: each token's lanes are 16 f64 and 2j + 2 <= 16.
            unsafe { vst1q_f64(l.as_mut_ptr().add(2 * j), *aj) };
        }
    }
}

/// NEON twin of `bf16_accumulate_tokens_portable`: tokens two at a time (sixteen
/// accumulators and the widened weights fill most of the 32 registers), then one.
///
/// # Safety
/// The CPU must support NEON; `w.len()` is a multiple of 16 and, for
/// `n = lanes.len() > 0`, `(n - 1) * x_stride + w.len() <= xs.len()`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn bf16_accumulate_tokens(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    let mut k = 0;
    for pair in lanes.chunks_exact_mut(2) {
        // SAFETY: tokens k and k + 1 lie in bounds per the caller.
        unsafe { bf16_span_tokens::<2>(w, &xs[k * x_stride..], x_stride, pair) };
        k += 2;
    }
    let rest = &mut lanes[k..];
    if !rest.is_empty() {
        // SAFETY: as above for the last token.
        unsafe { bf16_span_tokens::<1>(w, &xs[k * x_stride..], x_stride, rest) };
    }
}

/// Twelve independent chains of 2-lane f64 fused multiply-adds, `rounds` times: the FMA
/// rate probe for benchmarks (its result only keeps the work alive).
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn fma_probe_f64(rounds: usize) -> f64 {
    let mut acc: [float64x2_t; 12] = std::array::from_fn(|k| vdupq_n_f64(k as f64));
    let (m, c) = (vdupq_n_f64(0.999_999), vdupq_n_f64(1e-7));
    for _ in 0..rounds {
        for a in acc.iter_mut() {
            *a = vfmaq_f64(c, *a, m);
        }
    }
    let mut sum = vdupq_n_f64(0.0);
    for a in acc {
        sum = vaddq_f64(sum, a);
    }
    vgetq_lane_f64::<0>(sum) + vgetq_lane_f64::<1>(sum)
}

/// Sum of `data` with sixteen independent 4-lane accumulators: a memory-read probe for
/// benchmarks (its rounding order is not part of the model's FP contract).
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn read_sum(data: &[f32]) -> f32 {
    let mut acc = [vdupq_n_f32(0.0); 16];
    let full = data.len() / 64 * 64;
    let mut i = 0;
    while i < full {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: i + 4k + 4 <= i + 64 <= full <= data.len().
            *a = vaddq_f32(*a, unsafe { vld1q_f32(data.as_ptr().add(i + 4 * k)) });
        }
        i += 64;
    }
    let mut lanes = [0.0f32; 64];
    for (k, a) in acc.iter().enumerate() {
        // SAFETY: `lanes` holds 64 f32 and 4k + 4 <= 64.
        unsafe { vst1q_f32(lanes.as_mut_ptr().add(4 * k), *a) };
    }
    lanes.iter().sum::<f32>() + data[full..].iter().sum::<f32>()
}

/// One f32 row against two queries: the row's 16-element chunks are widened once for both,
/// each pair's lanes kept in eight registers and fed exactly as `dot16_neon` feeds them.
///
/// # Safety
/// The CPU must support NEON; the row and both queries have `row.len()` elements.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn dot_row_queries2(row: &[f32], qs: [&[f64]; 2]) -> [f32; 2] {
    let n = row.len();
    let full = n / 16 * 16;
    let mut acc = [zero16(); 2];
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 <= full <= n, the length of the row and of both queries.
        unsafe {
            let w = f32x16(row.as_ptr().add(i));
            for (a, q) in acc.iter_mut().zip(qs) {
                fma16(a, &w, q.as_ptr().add(i));
            }
        }
        i += 16;
    }
    let mut out = [0.0f32; 2];
    for ((o, a), q) in out.iter_mut().zip(&acc).zip(qs) {
        let mut total = finish16(a);
        for j in full..n {
            total += f64::from(row[j]) * q[j];
        }
        *o = total as f32;
    }
    out
}

/// NEON twin of `dot_f32_queries_portable`: each row against the queries two at a time
/// (the row widened once per pair of queries), each pair's result bit-identical to this
/// module's `dot_f32`.
///
/// # Safety
/// The CPU must support NEON; `rows.len()` and `queries.len()` are multiples of
/// `width > 0`, and `out` holds `(n_q - 1) * out_stride + n_rows` floats.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_f32_queries(rows: &[f32], width: usize, queries: &[f64], out: &mut [f32], out_stride: usize) {
    let mut q0 = 0;
    for pair in queries.chunks_exact(2 * width) {
        let qs = [&pair[..width], &pair[width..]];
        for (r, row) in rows.chunks_exact(width).enumerate() {
            // SAFETY: NEON per caller; every slice has `width` elements.
            let [a, b] = unsafe { dot_row_queries2(row, qs) };
            out[q0 * out_stride + r] = a;
            out[(q0 + 1) * out_stride + r] = b;
        }
        q0 += 2;
    }
    for query in queries.chunks_exact(width).skip(q0) {
        for (r, row) in rows.chunks_exact(width).enumerate() {
            // SAFETY: NEON per caller; both slices have `width` elements.
            out[q0 * out_stride + r] = unsafe { dot_f32(row, query) };
        }
        q0 += 1;
    }
}

/// NEON twin of `accumulate_weighted_rows_f32_portable`: 32 columns in eight registers
/// while every row passes; a separate f32 product (`vmulq_f32`) and sum (`vaddq_f32`), as
/// in the portable body, never a fused `vfmaq_f32`.
///
/// # Safety
/// The CPU must support NEON; the slices are laid out as
/// `accumulate_weighted_rows_f32_portable` documents.
#[target_feature(enable = "neon")]
pub(super) unsafe fn accumulate_weighted_rows_f32(
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
        let mut j = 0;
        while j + 32 <= width {
            let mut regs = [vdupq_n_f32(0.0); 8];
            for (k, reg) in regs.iter_mut().enumerate() {
                // SAFETY: j + 4k + 4 <= j + 32 <= width = a.len().
                *reg = unsafe { vld1q_f32(a.as_ptr().add(j + 4 * k)) };
            }
            for (r, &pr) in p.iter().enumerate() {
                let pv = vdupq_n_f32(pr);
                let base = r * row_stride + j;
                for (k, reg) in regs.iter_mut().enumerate() {
                    // SAFETY: base + 4k + 4 <= r * row_stride + width <= rows.len().
                    let v = unsafe { vld1q_f32(rows.as_ptr().add(base + 4 * k)) };
                    *reg = vaddq_f32(*reg, vmulq_f32(pv, v));
                }
            }
            for (k, reg) in regs.iter().enumerate() {
                // SAFETY: j + 4k + 4 <= width = a.len().
                unsafe { vst1q_f32(a.as_mut_ptr().add(j + 4 * k), *reg) };
            }
            j += 32;
        }
        for (jj, aj) in a.iter_mut().enumerate().skip(j) {
            for (r, &pr) in p.iter().enumerate() {
                *aj += pr * rows[r * row_stride + jj];
            }
        }
    }
}
