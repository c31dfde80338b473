//! AVX-512 bodies of the dense row kernels, bit-identical to the portable ones in `dot.rs`
//! (the MXFP4 bodies live in `mxfp4_avx512.rs`).
//!
//! Owns: the dense (F32, BF16) rows and the memory-read probe, named after the kernel they
//! implement (`dot_f32`, `dot_bf16`, `dot_bf16_rows4`, `bf16_accumulate_tokens`, `read_sum`,
//! `fma_probe_f64`) and visible only to
//! `kernels`, whose `dispatch` calls them. Depends on the leaf `dot` only. Each function keeps the FP
//! contract's lane assignment exactly: element `i` goes to f64 lane `i % 16` (two 8-lane
//! registers, lanes 0..8 and 8..16), reduced with the same scalar tree as the portable
//! body. Products of an f32/BF16 weight by an f32 activation are exact in f64, so fused
//! multiply-adds round like the portable multiply-then-add.
//! Must not: be called except through a `dispatch::DetectedIsa` for `Isa::Avx512` (only
//! runtime detection of AVX-512F and AVX-512BW makes one), call the dispatcher, or reorder
//! any addition.
//! Easy to break: the tail handling after the last full 16-element block (scalar, after
//! the tree, as in `dot16`).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::dot::{bf16_to_f64, reduce16};

/// Dense 16-lane dot product; `load16(i)` returns weights `i..i+16` as 16 f32.
///
/// # Safety
/// The CPU must support AVX-512F; `x.len() == n` and `load16` must read in bounds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dot16_avx512(n: usize, x: &[f64], load16: impl Fn(usize) -> __m512, tail: impl Fn(usize) -> f64) -> f32 {
    let full = n / 16 * 16;
    let mut lo = _mm512_setzero_pd();
    let mut hi = _mm512_setzero_pd();
    let mut i = 0;
    while i < full {
        let w = load16(i);
        let w_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(w));
        let w_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(w))));
        // SAFETY: i + 16 <= full <= x.len().
        let x_lo = unsafe { _mm512_loadu_pd(x.as_ptr().add(i)) };
        let x_hi = unsafe { _mm512_loadu_pd(x.as_ptr().add(i + 8)) };
        lo = _mm512_fmadd_pd(w_lo, x_lo, lo);
        hi = _mm512_fmadd_pd(w_hi, x_hi, hi);
        i += 16;
    }
    let mut lanes = [0.0f64; 16];
    // SAFETY: `lanes` holds 16 f64; unaligned stores.
    unsafe {
        _mm512_storeu_pd(lanes.as_mut_ptr(), lo);
        _mm512_storeu_pd(lanes.as_mut_ptr().add(8), hi);
    }
    let mut total = reduce16(&lanes);
    for (j, &xj) in x.iter().enumerate().take(n).skip(full) {
        total += tail(j) * xj;
    }
    total as f32
}

/// AVX-512 twin of `dot_f32_portable`.
///
/// # Safety
/// The CPU must support AVX-512F, and `w.len() == x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn dot_f32(w: &[f32], x: &[f64]) -> f32 {
    // SAFETY: the loader reads w[i..i+16] with i + 16 <= w.len(); features per caller.
    unsafe { dot16_avx512(w.len(), x, |i| _mm512_loadu_ps(w.as_ptr().add(i)), |j| f64::from(w[j])) }
}

/// Sixteen BF16 weights at `p` as 16 f32: each 16-bit value becomes the high half of a
/// 32-bit lane, which is its f32 exactly.
///
/// # Safety
/// The CPU must support AVX-512F; `p` must point at 16 readable `u16`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn bf16x16(p: *const u16) -> __m512 {
    // SAFETY: 32 readable bytes per the caller; unaligned load.
    let raw = unsafe { _mm256_loadu_si256(p.cast()) };
    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)))
}

/// AVX-512 twin of `dot_bf16_portable`.
///
/// # Safety
/// The CPU must support AVX-512F, and `w.len() == x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn dot_bf16(w: &[u16], x: &[f64]) -> f32 {
    // SAFETY: reads w[i..i+16], in bounds by the caller's loop (i + 16 <= w.len()).
    let load = |i: usize| unsafe { bf16x16(w.as_ptr().add(i)) };
    let tail = |j: usize| bf16_to_f64(w[j]);
    // SAFETY: features per caller; loader in bounds.
    unsafe { dot16_avx512(w.len(), x, load, tail) }
}

/// Adds one BF16 row span to the 16 lanes of `T` tokens at once: each 16-element block is
/// widened once into two 8-lane registers (elements 0..8 and 8..16) and fed to the `2·T`
/// accumulators (token `k`'s lanes 0..8 in `acc[k][0]`, 8..16 in `acc[k][1]`), exactly as
/// `dot16_avx512` feeds one token's.
///
/// # Safety
/// The CPU must support AVX-512F; `w.len()` is a multiple of 16 and every token's span
/// `xs[k * x_stride..][..w.len()]` (`k < T`) is in bounds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn bf16_span_tokens<const T: usize>(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    debug_assert!(lanes.len() == T && w.len().is_multiple_of(16));
    let mut acc = [[_mm512_setzero_pd(); 2]; T];
    for (a, l) in acc.iter_mut().zip(lanes.iter()) {
        // SAFETY: each token's lanes are 16 f64; unaligned loads of 8 at 0 and 8.
        *a = unsafe { [_mm512_loadu_pd(l.as_ptr()), _mm512_loadu_pd(l.as_ptr().add(8))] };
    }
    let mut i = 0;
    while i < w.len() {
        // SAFETY: i + 16 <= w.len().
        let wv = unsafe { bf16x16(w.as_ptr().add(i)) };
        let w_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(wv));
        let w_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(wv))));
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: token k's span holds w.len() >= i + 16 elements from k * x_stride.
            let x = unsafe { xs.as_ptr().add(k * x_stride + i) };
            // SAFETY: x..x + 16 lies within the token's span.
            let (x_lo, x_hi) = unsafe { (_mm512_loadu_pd(x), _mm512_loadu_pd(x.add(8))) };
            a[0] = _mm512_fmadd_pd(w_lo, x_lo, a[0]);
            a[1] = _mm512_fmadd_pd(w_hi, x_hi, a[1]);
        }
        i += 16;
    }
    for (a, l) in acc.iter().zip(lanes.iter_mut()) {
        // SAFETY: each token's lanes are 16 f64; unaligned stores of 8 at 0 and 8.
        unsafe {
            _mm512_storeu_pd(l.as_mut_ptr(), a[0]);
            _mm512_storeu_pd(l.as_mut_ptr().add(8), a[1]);
        }
    }
}

/// AVX-512 twin of `bf16_accumulate_tokens_portable`: tokens eight at a time (sixteen
/// accumulators and the widened weights within the 32 registers), then four, two, one.
///
/// # Safety
/// The CPU must support AVX-512F; `w.len()` is a multiple of 16 and, for
/// `n = lanes.len() > 0`, `(n - 1) * x_stride + w.len() <= xs.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn bf16_accumulate_tokens(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    let mut k = 0;
    while k < lanes.len() {
        let left = lanes.len() - k;
        let xs_k = &xs[k * x_stride..];
        // SAFETY: tokens k..k+n lie in bounds per the caller.
        let n = unsafe {
            match left {
                8.. => bf16_span_tokens::<8>(w, xs_k, x_stride, &mut lanes[k..k + 8]),
                4..=7 => bf16_span_tokens::<4>(w, xs_k, x_stride, &mut lanes[k..k + 4]),
                2 | 3 => bf16_span_tokens::<2>(w, xs_k, x_stride, &mut lanes[k..k + 2]),
                _ => bf16_span_tokens::<1>(w, xs_k, x_stride, &mut lanes[k..k + 1]),
            }
            match left {
                8.. => 8,
                4..=7 => 4,
                2 | 3 => 2,
                _ => 1,
            }
        };
        k += n;
    }
}

/// Four BF16 rows against one activation: each row's lanes, order and reduction are
/// exactly `dot_bf16`'s; the rows only share the activation loads, which gives the
/// CPU four independent accumulation chains.
///
/// # Safety
/// The CPU must support AVX-512F; every row has `x.len()` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn dot_bf16_rows4(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    let n = x.len();
    let full = n / 16 * 16;
    let mut lo = [_mm512_setzero_pd(); 4];
    let mut hi = [_mm512_setzero_pd(); 4];
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 <= full <= n = every row's length and x's length.
        let (x_lo, x_hi) = unsafe { (_mm512_loadu_pd(x.as_ptr().add(i)), _mm512_loadu_pd(x.as_ptr().add(i + 8))) };
        for r in 0..4 {
            // A hint PREFETCH_AHEAD elements ahead: never faults, even past the row's end.
            _mm_prefetch::<_MM_HINT_T0>(w[r].as_ptr().wrapping_add(i + PREFETCH_AHEAD).cast());
            // SAFETY: i + 16 <= full <= n, the row's length.
            let wf = unsafe { bf16x16(w[r].as_ptr().add(i)) };
            let w_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(wf));
            let w_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(wf))));
            lo[r] = _mm512_fmadd_pd(w_lo, x_lo, lo[r]);
            hi[r] = _mm512_fmadd_pd(w_hi, x_hi, hi[r]);
        }
        i += 16;
    }
    let mut out = [0.0f32; 4];
    for r in 0..4 {
        let mut lanes = [0.0f64; 16];
        // SAFETY: `lanes` holds 16 f64.
        unsafe {
            _mm512_storeu_pd(lanes.as_mut_ptr(), lo[r]);
            _mm512_storeu_pd(lanes.as_mut_ptr().add(8), hi[r]);
        }
        let mut total = reduce16(&lanes);
        for (j, &xj) in x.iter().enumerate().skip(full) {
            total += bf16_to_f64(w[r][j]) * xj;
        }
        out[r] = total as f32;
    }
    out
}

/// Elements (2 KiB of BF16) ahead of the current column that the four-row BF16 body asks
/// the CPU to prefetch: with both cores computing, the hardware prefetchers alone left the
/// 12288×7168 product at 7.7–8.1 ms at 2 threads; with the hint it ran in 6.0–6.5 ms (three
/// alternating runs of each build, this machine). The AVX2 body did not gain from it.
const PREFETCH_AHEAD: usize = 1024;

/// Sum of `data` with eight independent 16-lane accumulators: a memory-read probe for
/// benchmarks (its rounding order is not part of the model's FP contract).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn read_sum(data: &[f32]) -> f32 {
    let mut acc = [_mm512_setzero_ps(); 8];
    let full = data.len() / 128 * 128;
    let mut i = 0;
    while i < full {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: i + 16k + 16 <= full <= data.len().
            *a = _mm512_add_ps(*a, unsafe { _mm512_loadu_ps(data.as_ptr().add(i + 16 * k)) });
        }
        i += 128;
    }
    let mut total: f32 = acc.iter().map(|&a| _mm512_reduce_add_ps(a)).sum();
    total += data[full..].iter().sum::<f32>();
    total
}

/// Twelve independent chains of 8-lane f64 fused multiply-adds, `rounds` times: the FMA
/// rate probe for benchmarks (its result only keeps the work alive).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn fma_probe_f64(rounds: usize) -> f64 {
    let mut acc: [__m512d; 12] = std::array::from_fn(|k| _mm512_set1_pd(k as f64));
    let (m, c) = (_mm512_set1_pd(0.999_999), _mm512_set1_pd(1e-7));
    for _ in 0..rounds {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_pd(*a, m, c);
        }
    }
    acc.iter().map(|&a| _mm512_reduce_add_pd(a)).sum()
}

/// Rows `rows` against queries `qs`, every pair's 16 lanes kept in two registers and fed
/// exactly as `dot16_avx512` feeds them; each row is widened once for all `Q` queries and
/// each query chunk loaded once for all `R` rows. Returns `[row][query]`.
///
/// # Safety
/// The CPU must support AVX-512F; every row and query has `qs[0].len()` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn dot_block<const R: usize, const Q: usize>(rows: [&[f32]; R], qs: [&[f64]; Q]) -> [[f32; Q]; R] {
    let n = qs[0].len();
    let full = n / 16 * 16;
    let mut lo = [[_mm512_setzero_pd(); Q]; R];
    let mut hi = [[_mm512_setzero_pd(); Q]; R];
    let mut i = 0;
    while i < full {
        let mut w_lo = [_mm512_setzero_pd(); R];
        let mut w_hi = [_mm512_setzero_pd(); R];
        for r in 0..R {
            // SAFETY: i + 16 <= full <= n, every row's length.
            let w = unsafe { _mm512_loadu_ps(rows[r].as_ptr().add(i)) };
            w_lo[r] = _mm512_cvtps_pd(_mm512_castps512_ps256(w));
            w_hi[r] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(w))));
        }
        for q in 0..Q {
            // SAFETY: i + 16 <= full <= n, every query's length.
            let (x_lo, x_hi) =
                unsafe { (_mm512_loadu_pd(qs[q].as_ptr().add(i)), _mm512_loadu_pd(qs[q].as_ptr().add(i + 8))) };
            for r in 0..R {
                lo[r][q] = _mm512_fmadd_pd(w_lo[r], x_lo, lo[r][q]);
                hi[r][q] = _mm512_fmadd_pd(w_hi[r], x_hi, hi[r][q]);
            }
        }
        i += 16;
    }
    let mut out = [[0.0f32; Q]; R];
    for r in 0..R {
        for q in 0..Q {
            let mut lanes = [0.0f64; 16];
            // SAFETY: `lanes` holds 16 f64; unaligned stores.
            unsafe {
                _mm512_storeu_pd(lanes.as_mut_ptr(), lo[r][q]);
                _mm512_storeu_pd(lanes.as_mut_ptr().add(8), hi[r][q]);
            }
            let mut total = reduce16(&lanes);
            for j in full..n {
                total += f64::from(rows[r][j]) * qs[q][j];
            }
            out[r][q] = total as f32;
        }
    }
    out
}

/// AVX-512 twin of `dot_f32_queries_portable`: rows in pairs against queries in fours
/// (sixteen accumulation chains), each pair's result bit-identical to `dot_f32`.
///
/// # Safety
/// The CPU must support AVX-512F; `rows.len()` and `queries.len()` are multiples of
/// `width > 0`, and `out` holds `(n_q - 1) * out_stride + n_rows` floats.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn dot_f32_queries(rows: &[f32], width: usize, queries: &[f64], out: &mut [f32], out_stride: usize) {
    let n_rows = rows.len() / width;
    let row = |r: usize| &rows[r * width..(r + 1) * width];
    let mut q0 = 0;
    for quad in queries.chunks_exact(4 * width) {
        let qs: [&[f64]; 4] = [0, 1, 2, 3].map(|k| &quad[k * width..(k + 1) * width]);
        let mut r = 0;
        while r + 2 <= n_rows {
            // SAFETY: features per caller; every slice has `width` elements.
            let got = unsafe { dot_block::<2, 4>([row(r), row(r + 1)], qs) };
            for (k, g) in got.iter().enumerate() {
                for (q, &v) in g.iter().enumerate() {
                    out[(q0 + q) * out_stride + r + k] = v;
                }
            }
            r += 2;
        }
        if r < n_rows {
            // SAFETY: as above.
            let got = unsafe { dot_block::<1, 4>([row(r)], qs) };
            for (q, &v) in got[0].iter().enumerate() {
                out[(q0 + q) * out_stride + r] = v;
            }
        }
        q0 += 4;
    }
    for query in queries.chunks_exact(width).skip(q0) {
        for r in 0..n_rows {
            // SAFETY: as above.
            out[q0 * out_stride + r] = unsafe { dot_block::<1, 1>([row(r)], [query]) }[0][0];
        }
        q0 += 1;
    }
}

/// AVX-512 twin of `accumulate_weighted_rows_f32_portable`: 64 accumulators' worth of
/// columns stay in four registers while every row passes; products and sums are separate
/// f32 instructions, as in the portable body (a fused multiply-add would round once).
///
/// # Safety
/// The CPU must support AVX-512F; `rows.len()` is a multiple of `row_stride >= width`,
/// `acc.len()` a multiple of `width`, and `weights` holds `n_rows` floats from
/// `q * w_stride` for every accumulator `q`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
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
        while j + 64 <= width {
            // SAFETY: j + 64 <= width = a.len().
            let mut regs = unsafe { [0, 16, 32, 48].map(|k| _mm512_loadu_ps(a.as_ptr().add(j + k))) };
            for (r, &pr) in p.iter().enumerate() {
                let pv = _mm512_set1_ps(pr);
                let base = r * row_stride + j;
                for (k, reg) in regs.iter_mut().enumerate() {
                    // SAFETY: base + 16k + 16 <= r * row_stride + width <= rows.len().
                    let v = unsafe { _mm512_loadu_ps(rows.as_ptr().add(base + 16 * k)) };
                    *reg = _mm512_add_ps(*reg, _mm512_mul_ps(pv, v));
                }
            }
            for (k, reg) in regs.iter().enumerate() {
                // SAFETY: j + 16k + 16 <= width = a.len().
                unsafe { _mm512_storeu_ps(a.as_mut_ptr().add(j + 16 * k), *reg) };
            }
            j += 64;
        }
        while j + 16 <= width {
            // SAFETY: j + 16 <= width = a.len().
            let mut reg = unsafe { _mm512_loadu_ps(a.as_ptr().add(j)) };
            for (r, &pr) in p.iter().enumerate() {
                // SAFETY: r * row_stride + j + 16 <= r * row_stride + width <= rows.len().
                let v = unsafe { _mm512_loadu_ps(rows.as_ptr().add(r * row_stride + j)) };
                reg = _mm512_add_ps(reg, _mm512_mul_ps(_mm512_set1_ps(pr), v));
            }
            // SAFETY: as the load above.
            unsafe { _mm512_storeu_ps(a.as_mut_ptr().add(j), reg) };
            j += 16;
        }
        for (jj, aj) in a.iter_mut().enumerate().skip(j) {
            for (r, &pr) in p.iter().enumerate() {
                *aj += pr * rows[r * row_stride + jj];
            }
        }
    }
}

/// Two BF16 row spans against four tokens: the matrix × matrix form of
/// [`bf16_accumulate_tokens`]. Per 16 columns the four tokens' activations are loaded once
/// for both rows and each row's weights widened once for all four tokens, so the 16
/// accumulation chains need 10 loads where one row at a time needs 16. Each (row, token)
/// keeps its 16 contract lanes, fed in column order: the same bits as one row at a time.
///
/// # Safety
/// The CPU must support AVX-512F; both spans have the same length, a multiple of 16;
/// every token's span `xs[k * x_stride..][..w[0].len()]` (`k < 4`) is in bounds; each
/// `lanes` holds four tokens' lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn bf16_rows2_tokens4(w: [&[u16]; 2], xs: &[f64], x_stride: usize, lanes: [&mut [[f64; 16]]; 2]) {
    let mut acc = [[[_mm512_setzero_pd(); 2]; 4]; 2];
    for (row_acc, row_lanes) in acc.iter_mut().zip(lanes.iter()) {
        for (a, l) in row_acc.iter_mut().zip(row_lanes.iter()) {
            // SAFETY: each token's lanes are 16 f64; unaligned loads of 8 at 0 and 8.
            *a = unsafe { [_mm512_loadu_pd(l.as_ptr()), _mm512_loadu_pd(l.as_ptr().add(8))] };
        }
    }
    let mut i = 0;
    while i < w[0].len() {
        // SAFETY: token k's span holds w[0].len() >= i + 16 elements from k * x_stride.
        let x: [[__m512d; 2]; 4] = std::array::from_fn(|k| unsafe {
            let p = xs.as_ptr().add(k * x_stride + i);
            [_mm512_loadu_pd(p), _mm512_loadu_pd(p.add(8))]
        });
        for (row, row_acc) in w.iter().zip(acc.iter_mut()) {
            // SAFETY: i + 16 <= the span's length.
            let wv = unsafe { bf16x16(row.as_ptr().add(i)) };
            let w_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(wv));
            let w_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(wv))));
            for (a, xk) in row_acc.iter_mut().zip(&x) {
                a[0] = _mm512_fmadd_pd(w_lo, xk[0], a[0]);
                a[1] = _mm512_fmadd_pd(w_hi, xk[1], a[1]);
            }
        }
        i += 16;
    }
    for (row_acc, row_lanes) in acc.iter().zip(lanes) {
        for (a, l) in row_acc.iter().zip(row_lanes.iter_mut()) {
            // SAFETY: each token's lanes are 16 f64; unaligned stores of 8 at 0 and 8.
            unsafe {
                _mm512_storeu_pd(l.as_mut_ptr(), a[0]);
                _mm512_storeu_pd(l.as_mut_ptr().add(8), a[1]);
            }
        }
    }
}
