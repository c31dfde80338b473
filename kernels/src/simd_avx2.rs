//! AVX2 + FMA bodies of the row kernels, bit-identical to the portable ones in `dot.rs`.
//!
//! Owns: the 256-bit SIMD `unsafe` for x86-64 CPUs without AVX-512 (the dispatcher prefers
//! `simd_x86.rs` when AVX-512 is there): the bodies `dot_f32`, `dot_bf16`, `dot_bf16_rows4`,
//! `dot_mxfp4`, `mxfp4_accumulate_tokens` and `read_sum`, named after the kernel they
//! implement and visible only to `kernels`, whose `dispatch` calls them. Depends on the
//! leaf `dot` only. A ymm register holds four f64, so the contract's
//! lanes map onto registers as follows:
//! * dense rows (F32, BF16): four accumulators, `acc[k]` holds lanes `4k..4k+4`; element
//!   `i` of every full 16-block goes to lane `i % 16`; the lanes are stored and reduced by
//!   the portable `reduce16`; the `len % 16` tail is added sequentially afterwards;
//! * MXFP4 groups: two accumulators, lanes `0..4` and `4..8`, fed by the group's four
//!   8-element chunks in order, then `(s0+s4, s1+s5, s2+s6, s3+s7)` as one vector add and
//!   `(b0+b1)+(b2+b3)` in scalar code, times the group scale, added in group order.
//!
//! Products of an f32/BF16/E2M1 weight by an f32 activation are exact in f64, so the fused
//! multiply-adds round exactly like the portable multiply-then-add.
//! Must not: be called except through a `dispatch::DetectedIsa` for `Isa::Avx2` (only
//! runtime detection of AVX2 and FMA makes one), call the dispatcher, reorder any
//! addition, or give a register lane more than one contract lane.
//! Easy to break: the MXFP4 decode (no widened row, no gather): each 32-bit lane looks up
//! an element's high f64 word in an 8-entry `vpermd` table, lanes holding elements
//! `0,4,1,5,2,6,3,7` so that the even lanes shifted up and the odd lanes masked give
//! elements `0..4` and `4..8` in natural order; the shift table in [`tables`] and that
//! split must change together, and the table entries are pre-XORed with the magnitude bits
//! the sign XOR brings along. The low nibble of a packed byte is the EVEN element.

use std::arch::x86_64::*;

use crate::dot::{bf16_to_f64, e8m0_scale, reduce16, E2M1_F64_HIGH_WORDS};

/// Reduces four 4-lane accumulators (`acc[k]` = lanes `4k..4k+4`) with the contract's
/// 16-lane tree.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn finish16(acc: &[__m256d; 4]) -> f64 {
    let mut lanes = [0.0f64; 16];
    for (k, a) in acc.iter().enumerate() {
        // SAFETY: `lanes` holds 16 f64 and 4k + 4 <= 16; unaligned store.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr().add(4 * k), *a) };
    }
    reduce16(&lanes)
}

/// Dense 16-lane dot product: `load16(i)` returns weights `i..i+16` as four f64 vectors
/// (elements `i+4k..i+4k+4` in vector `k`), `tail(j)` weight `j` as f64.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `load16(i)` must read in bounds whenever
/// `i + 16 <= x.len()`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dot16_avx2(x: &[f64], load16: impl Fn(usize) -> [__m256d; 4], tail: impl Fn(usize) -> f64) -> f32 {
    let full = x.len() / 16 * 16;
    let mut acc = [_mm256_setzero_pd(); 4];
    let mut i = 0;
    while i < full {
        let w = load16(i);
        for (k, (a, wk)) in acc.iter_mut().zip(w).enumerate() {
            // SAFETY: i + 4k + 4 <= i + 16 <= full <= x.len().
            let xk = unsafe { _mm256_loadu_pd(x.as_ptr().add(i + 4 * k)) };
            *a = _mm256_fmadd_pd(wk, xk, *a);
        }
        i += 16;
    }
    let mut total = finish16(&acc);
    for (j, &xj) in x.iter().enumerate().skip(full) {
        total += tail(j) * xj;
    }
    total as f32
}

/// AVX2 twin of `dot_f32_portable`.
///
/// # Safety
/// The CPU must support AVX2 and FMA, and `w.len() == x.len()`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot_f32(w: &[f32], x: &[f64]) -> f32 {
    debug_assert_eq!(w.len(), x.len());
    let load = |i: usize| {
        // SAFETY: reads w[i..i+16], in bounds because i + 16 <= x.len() == w.len().
        unsafe { [0, 4, 8, 12].map(|k| _mm256_cvtps_pd(_mm_loadu_ps(w.as_ptr().add(i + k)))) }
    };
    // SAFETY: features per caller; the loader stays in bounds (see above).
    unsafe { dot16_avx2(x, load, |j| f64::from(w[j])) }
}

/// Sixteen BF16 weights at `p` widened to f64, four per vector, in element order: each
/// 16-bit value becomes the high half of a 32-bit lane (an unpack with zero), which is
/// its f32, then widened exactly to f64.
///
/// # Safety
/// The CPU must support AVX2; `p` must point at 16 readable `u16`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn bf16x16(p: *const u16) -> [__m256d; 4] {
    // SAFETY: p..p+16 is readable per the caller; unaligned 16-byte loads.
    let (a, b) = unsafe { (_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(8).cast())) };
    let zero = _mm_setzero_si128();
    let widen = |v: __m128i| _mm256_cvtps_pd(_mm_castsi128_ps(v));
    [
        widen(_mm_unpacklo_epi16(zero, a)),
        widen(_mm_unpackhi_epi16(zero, a)),
        widen(_mm_unpacklo_epi16(zero, b)),
        widen(_mm_unpackhi_epi16(zero, b)),
    ]
}

/// AVX2 twin of `dot_bf16_portable`.
///
/// # Safety
/// The CPU must support AVX2 and FMA, and `w.len() == x.len()`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot_bf16(w: &[u16], x: &[f64]) -> f32 {
    debug_assert_eq!(w.len(), x.len());
    // SAFETY: reads w[i..i+16] with i + 16 <= x.len() == w.len().
    let load = |i: usize| unsafe { bf16x16(w.as_ptr().add(i)) };
    // SAFETY: features per caller; the loader stays in bounds.
    unsafe { dot16_avx2(x, load, |j| bf16_to_f64(w[j])) }
}

/// Elements `i..end` (`i`, `end` multiples of 16) of two BF16 rows into their 16-lane
/// accumulators, exactly as `dot16_avx2` would: eight independent accumulation chains
/// (enough to keep both FMA ports busy) sharing the activation loads.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `end <= x.len()` and both rows have `x.len()`
/// elements.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn bf16_rows2_span(w: [&[u16]; 2], x: &[f64], mut i: usize, end: usize, acc: &mut [[__m256d; 4]; 2]) {
    let (mut a0, mut a1) = (acc[0], acc[1]);
    while i < end {
        // SAFETY: i + 16 <= end <= x.len(), the length of x and of both rows.
        let (xv, w0, w1) = unsafe {
            (
                [0, 4, 8, 12].map(|k| _mm256_loadu_pd(x.as_ptr().add(i + k))),
                bf16x16(w[0].as_ptr().add(i)),
                bf16x16(w[1].as_ptr().add(i)),
            )
        };
        for k in 0..4 {
            a0[k] = _mm256_fmadd_pd(w0[k], xv[k], a0[k]);
            a1[k] = _mm256_fmadd_pd(w1[k], xv[k], a1[k]);
        }
        i += 16;
    }
    *acc = [a0, a1];
}

/// Columns per step of `dot_bf16_rows4`: rows 0-1 then rows 2-3 run over this many
/// elements (two cache lines of each row) before moving on, so all four weight rows stream
/// from memory together. Running the pairs one whole row after the other instead was
/// ~30% slower on a 12288×7168 matrix (fewer concurrent streams for the prefetchers).
const ROWS4_SPAN: usize = 64;

/// Four BF16 rows against one activation, each bit-identical to `dot_bf16`.
///
/// Four rows' 16 lanes would take all 16 ymm registers, so two rows at a time run over a
/// span of `ROWS4_SPAN` columns (their activations stay in L1 for the second pair), with
/// the other pair's accumulators parked in memory. Every lane still receives its elements
/// in column order, so the split changes no rounding.
///
/// # Safety
/// The CPU must support AVX2 and FMA; every row has `x.len()` elements.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot_bf16_rows4(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    debug_assert!(w.iter().all(|r| r.len() == x.len()));
    let full = x.len() / 16 * 16;
    let mut acc = [[[_mm256_setzero_pd(); 4]; 2]; 2];
    let mut i = 0;
    while i < full {
        let end = (i + ROWS4_SPAN).min(full);
        for (pair, acc_pair) in acc.iter_mut().enumerate() {
            // SAFETY: features per caller; i and end are multiples of 16 with end <= x.len().
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
/// widened once and fed to the `4·T` accumulators (token `k`'s lanes `4j..4j+4` in
/// `acc[k][j]`), exactly as `dot16_avx2` feeds one token's.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `w.len()` is a multiple of 16 and every token's
/// span `xs[k * x_stride..][..w.len()]` (`k < T`) is in bounds.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn bf16_span_tokens<const T: usize>(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    debug_assert!(lanes.len() == T && w.len().is_multiple_of(16));
    let mut acc = [[_mm256_setzero_pd(); 4]; T];
    for (a, l) in acc.iter_mut().zip(lanes.iter()) {
        // SAFETY: each token's lanes are 16 f64; unaligned loads of 4 at 4j.
        *a = [0, 4, 8, 12].map(|j| unsafe { _mm256_loadu_pd(l.as_ptr().add(j)) });
    }
    let mut i = 0;
    while i < w.len() {
        // SAFETY: i + 16 <= w.len().
        let wv = unsafe { bf16x16(w.as_ptr().add(i)) };
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: token k's span holds w.len() >= i + 16 elements from k * x_stride.
            let x = unsafe { xs.as_ptr().add(k * x_stride + i) };
            for (j, (aj, wj)) in a.iter_mut().zip(wv).enumerate() {
                // SAFETY: x + 4j + 4 <= x + 16, within the token's span.
                *aj = _mm256_fmadd_pd(wj, unsafe { _mm256_loadu_pd(x.add(4 * j)) }, *aj);
            }
        }
        i += 16;
    }
    for (a, l) in acc.iter().zip(lanes.iter_mut()) {
        for (j, aj) in a.iter().enumerate() {
            // SAFETY: each token's lanes are 16 f64; unaligned store of 4 at 4j.
            unsafe { _mm256_storeu_pd(l.as_mut_ptr().add(4 * j), *aj) };
        }
    }
}

/// AVX2 twin of `bf16_accumulate_tokens_portable`: tokens three at a time (twelve
/// accumulators and the widened weights fill the sixteen registers), then a pair or one.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `w.len()` is a multiple of 16 and, for
/// `n = lanes.len() > 0`, `(n - 1) * x_stride + w.len() <= xs.len()`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn bf16_accumulate_tokens(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    let mut k = 0;
    for triple in lanes.chunks_exact_mut(3) {
        // SAFETY: tokens k..k+3 lie in bounds per the caller.
        unsafe { bf16_span_tokens::<3>(w, &xs[k * x_stride..], x_stride, triple) };
        k += 3;
    }
    let rest = &mut lanes[k..];
    // SAFETY: as above for the last one or two tokens.
    match rest.len() {
        2 => unsafe { bf16_span_tokens::<2>(w, &xs[k * x_stride..], x_stride, rest) },
        1 => unsafe { bf16_span_tokens::<1>(w, &xs[k * x_stride..], x_stride, rest) },
        _ => {}
    }
}

/// Twelve independent chains of 4-lane f64 fused multiply-adds, `rounds` times: the FMA
/// rate probe for benchmarks (its result only keeps the work alive).
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn fma_probe_f64(rounds: usize) -> f64 {
    let mut acc: [__m256d; 12] = std::array::from_fn(|k| _mm256_set1_pd(k as f64));
    let (m, c) = (_mm256_set1_pd(0.999_999), _mm256_set1_pd(1e-7));
    for _ in 0..rounds {
        for a in acc.iter_mut() {
            *a = _mm256_fmadd_pd(*a, m, c);
        }
    }
    let mut sum = _mm256_setzero_pd();
    for a in acc {
        sum = _mm256_add_pd(sum, a);
    }
    let mut lanes = [0.0f64; 4];
    // SAFETY: `lanes` holds 4 f64; unaligned store.
    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), sum) };
    lanes.iter().sum()
}

/// Constants of the MXFP4 decode, built at the top of each body that decodes (a few loads
/// from read-only data) and only lent to helpers that inline, so they live in registers.
/// Never pass them by reference to a call: a release build once kept them for such a call
/// in a stack slot it had not aligned to 32 bytes and stored them with an aligned move — a
/// crash at every other stack depth (`every_body_runs_from_every_stack_alignment`).
struct Tables {
    /// Entry `m` (code `m` = magnitude bits, 0..8): the high 32 bits of the f64 E2M1 value
    /// (its low 32 bits are zero) XOR `m << 28`, which cancels the magnitude bits that the
    /// decode's `nibble << 28` brings along with the sign bit.
    hi_words: __m256i,
    /// 32-bit lane `p` right-shifts the chunk's word by `4·π(p)`, `π = 0,4,1,5,2,6,3,7`:
    /// the nibble of element `π(p)` lands in bits 0..3 (the permute reads bits 0..2).
    idx_shift: __m256i,
    /// The high 32-bit half of every 64-bit lane.
    high_halves: __m256i,
}

#[target_feature(enable = "avx2,fma")]
fn tables() -> Tables {
    let hi: [i32; 8] = std::array::from_fn(|m| (E2M1_F64_HIGH_WORDS[m] ^ ((m as u32) << 28)) as i32);
    // SAFETY: `hi` holds 8 i32 (32 bytes); unaligned load.
    let hi_words = unsafe { _mm256_loadu_si256(hi.as_ptr().cast()) };
    Tables {
        hi_words,
        idx_shift: _mm256_setr_epi32(0, 16, 4, 20, 8, 24, 12, 28),
        high_halves: _mm256_set1_epi64x(-1 << 32),
    }
}

/// The eight E2M1 values of one 4-byte chunk (elements `0..8`, element `e` in nibble `e`
/// of the little-endian word) as two f64 vectors, elements `0..4` and `4..8`.
///
/// The word is broadcast to every 32-bit lane; lane `p` shifts its element's nibble `n`
/// down (bits above it are junk the permute ignores), looks up `hi(n & 7) ^ (n & 7) << 28`
/// with an 8-entry permute and XORs in `n << 28` (a plain shift drops the junk): the
/// magnitude bits cancel and the sign bit lands in bit 31, giving the value's high f64
/// word. Even lanes (elements 0..4) move up into the high half of their 64-bit lane, odd
/// lanes (elements 4..8) already sit there and keep it: two f64 vectors with low words 0,
/// and only the permute on the shuffle port.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn decode_chunk(word: u32, t: &Tables) -> [__m256d; 2] {
    let w = _mm256_set1_epi32(word as i32);
    let nib = _mm256_srlv_epi32(w, t.idx_shift);
    // 32-bit lanes hold the high words of elements 0,4 | 1,5 | 2,6 | 3,7.
    let hi = _mm256_xor_si256(_mm256_permutevar8x32_epi32(t.hi_words, nib), _mm256_slli_epi32::<28>(nib));
    [_mm256_castsi256_pd(_mm256_slli_epi64::<32>(hi)), _mm256_castsi256_pd(_mm256_and_si256(hi, t.high_halves))]
}

/// The 32 E2M1 values of one group: `v[2q]` = elements `8q..8q+4`, `v[2q+1]` = `8q+4..8q+8`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `group` must point at 16 readable bytes.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn decode_group(group: *const u8, t: &Tables) -> [__m256d; 8] {
    let mut v = [_mm256_setzero_pd(); 8];
    for (q, pair) in v.chunks_exact_mut(2).enumerate() {
        // SAFETY: bytes 4q..4q+4 (q < 4) lie within the group's 16 readable bytes.
        let word = u32::from_le(unsafe { std::ptr::read_unaligned(group.add(4 * q).cast::<u32>()) });
        pair.copy_from_slice(&decode_chunk(word, t));
    }
    v
}

/// One group's unscaled dot product with the 8-lane contract.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `xg` must point at 32 readable f64.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn group_dot(v: &[__m256d; 8], xg: *const f64) -> f64 {
    let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for (q, pair) in v.chunks_exact(2).enumerate() {
        // SAFETY: xg + 8q .. xg + 8q + 8 lies within the caller's 32 f64.
        let (x_lo, x_hi) = unsafe { (_mm256_loadu_pd(xg.add(8 * q)), _mm256_loadu_pd(xg.add(8 * q + 4))) };
        lo = _mm256_fmadd_pd(pair[0], x_lo, lo);
        hi = _mm256_fmadd_pd(pair[1], x_hi, hi);
    }
    // b_l = s_l + s_{l+4}, then (b0 + b1) + (b2 + b3) in scalar code.
    let mut b = [0.0f64; 4];
    // SAFETY: `b` holds 4 f64; unaligned store.
    unsafe { _mm256_storeu_pd(b.as_mut_ptr(), _mm256_add_pd(lo, hi)) };
    (b[0] + b[1]) + (b[2] + b[3])
}

/// Adds groups `0..scales.len()` of one row to `total`, in order.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `packed.len() == 16 * scales.len()` and
/// `x.len() >= 32 * scales.len()`.
#[target_feature(enable = "avx2,fma")]
unsafe fn accumulate_row(packed: &[u8], scales: &[u8], x: &[f64], total: &mut f64) {
    let t = &tables();
    for (g, &scale) in scales.iter().enumerate() {
        if scale == 255 {
            continue;
        }
        // SAFETY: group g owns packed[16g..16g+16] and x[32g..32g+32], in bounds by the
        // length relations the caller guarantees.
        let group = unsafe { group_dot(&decode_group(packed.as_ptr().add(16 * g), t), x.as_ptr().add(32 * g)) };
        *total += group * e8m0_scale(scale);
    }
}

/// AVX2 twin of `dot_mxfp4_portable`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `packed.len() * 2 == x.len()` and
/// `scales.len() * 32 == x.len()`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot_mxfp4(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    debug_assert!(packed.len() * 2 == x.len() && scales.len() * 32 == x.len());
    let mut total = 0.0f64;
    // SAFETY: features and lengths per the caller.
    unsafe { accumulate_row(packed, scales, x, &mut total) };
    total as f32
}

/// Adds groups `0..scales.len()` of one row to the running totals of `totals.len()`
/// tokens, token `k`'s activations starting at `xs[k * x_stride]`: each group's nibbles are
/// decoded once for every token; each token's arithmetic is exactly [`accumulate_row`]'s.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `packed.len() == 16 * scales.len()` and, for
/// `n = totals.len() > 0`, `(n - 1) * x_stride + 32 * scales.len() <= xs.len()`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn mxfp4_accumulate_tokens(
    packed: &[u8],
    scales: &[u8],
    xs: &[f64],
    x_stride: usize,
    totals: &mut [f64],
) {
    let t = tables();
    let paired = totals.len() / 2 * 2;
    for (g, &scale) in scales.iter().enumerate() {
        if scale == 255 {
            continue;
        }
        // SAFETY: group g owns packed[16g..16g+16]; in bounds by the length relations.
        let v = unsafe { decode_group(packed.as_ptr().add(16 * g), &t) };
        let s = e8m0_scale(scale);
        for k in (0..paired).step_by(2) {
            // SAFETY: tokens k and k + 1 own xs[(k + i) * x_stride + 32g ..][..32] and
            // totals[k..k + 2], in bounds per the caller.
            unsafe {
                let x = xs.as_ptr().add(k * x_stride + 32 * g);
                let sums = group_dot2(&v, [x, x.add(x_stride)]);
                let at = totals.as_mut_ptr().add(k);
                _mm_storeu_pd(at, _mm_add_pd(_mm_loadu_pd(at), _mm_mul_pd(sums, _mm_set1_pd(s))));
            }
        }
        if paired < totals.len() {
            // SAFETY: the last token owns xs[paired * x_stride + 32g ..][..32].
            totals[paired] += unsafe { group_dot(&v, xs.as_ptr().add(paired * x_stride + 32 * g)) } * s;
        }
    }
}

/// One group's unscaled dot products with two tokens, as `[token 0, token 1]`: each
/// token's lanes exactly as [`group_dot`] feeds them, reduced together: `lo + hi` gives
/// each token's `b_l = s_l + s_{l+4}`, a horizontal add `(b0 + b1)` and `(b2 + b3)` of both,
/// and the halves' sum `(b0 + b1) + (b2 + b3)`: the same additions on the same values.
///
/// # Safety
/// The CPU must support AVX2 and FMA; each `xg` must point at 32 readable f64.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn group_dot2(v: &[__m256d; 8], xg: [*const f64; 2]) -> __m128d {
    let mut acc = [[_mm256_setzero_pd(); 2]; 2];
    for (q, pair) in v.chunks_exact(2).enumerate() {
        for (a, x) in acc.iter_mut().zip(xg) {
            // SAFETY: x + 8q .. x + 8q + 8 lies within the caller's 32 f64.
            let (x_lo, x_hi) = unsafe { (_mm256_loadu_pd(x.add(8 * q)), _mm256_loadu_pd(x.add(8 * q + 4))) };
            a[0] = _mm256_fmadd_pd(pair[0], x_lo, a[0]);
            a[1] = _mm256_fmadd_pd(pair[1], x_hi, a[1]);
        }
    }
    let [b_first, b_second] = acc.map(|[lo, hi]| _mm256_add_pd(lo, hi));
    // [f0 + f1, s0 + s1, f2 + f3, s2 + s3]
    let halves = _mm256_hadd_pd(b_first, b_second);
    _mm_add_pd(_mm256_castpd256_pd128(halves), _mm256_extractf128_pd::<1>(halves))
}

/// Sum of `data` with eight independent 8-lane accumulators: a memory-read probe for
/// benchmarks (its rounding order is not part of the model's FP contract).
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn read_sum(data: &[f32]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 8];
    let full = data.len() / 64 * 64;
    let mut i = 0;
    while i < full {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: i + 8k + 8 <= full <= data.len().
            *a = _mm256_add_ps(*a, unsafe { _mm256_loadu_ps(data.as_ptr().add(i + 8 * k)) });
        }
        i += 64;
    }
    let mut lanes = [0.0f32; 64];
    for (k, a) in acc.iter().enumerate() {
        // SAFETY: `lanes` holds 64 f32 and 8k + 8 <= 64.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr().add(8 * k), *a) };
    }
    lanes.iter().sum::<f32>() + data[full..].iter().sum::<f32>()
}

/// One f32 row against two queries: the row's 16-element chunks are widened once for both,
/// each pair's lanes kept in four registers and fed exactly as `dot16_avx2` feeds them.
///
/// # Safety
/// The CPU must support AVX2 and FMA; the row and both queries have `row.len()` elements.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dot_row_queries2(row: &[f32], qs: [&[f64]; 2]) -> [f32; 2] {
    let n = row.len();
    let full = n / 16 * 16;
    let mut acc = [[_mm256_setzero_pd(); 4]; 2];
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 <= full <= n, the row's length.
        let w = unsafe { [0, 4, 8, 12].map(|k| _mm256_cvtps_pd(_mm_loadu_ps(row.as_ptr().add(i + k)))) };
        for (a, q) in acc.iter_mut().zip(qs) {
            for (k, (ak, wk)) in a.iter_mut().zip(w).enumerate() {
                // SAFETY: i + 4k + 4 <= i + 16 <= n, each query's length.
                let xk = unsafe { _mm256_loadu_pd(q.as_ptr().add(i + 4 * k)) };
                *ak = _mm256_fmadd_pd(wk, xk, *ak);
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

/// AVX2 twin of `dot_f32_queries_portable`: each row against the queries two at a time
/// (eight accumulation chains, the row widened once per pair of queries), each pair's result
/// bit-identical to this module's `dot_f32`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `rows.len()` and `queries.len()` are multiples of
/// `width > 0`, and `out` holds `(n_q - 1) * out_stride + n_rows` floats.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn dot_f32_queries(rows: &[f32], width: usize, queries: &[f64], out: &mut [f32], out_stride: usize) {
    let mut q0 = 0;
    for pair in queries.chunks_exact(2 * width) {
        let qs = [&pair[..width], &pair[width..]];
        for (r, row) in rows.chunks_exact(width).enumerate() {
            // SAFETY: features per caller; every slice has `width` elements.
            let [a, b] = unsafe { dot_row_queries2(row, qs) };
            out[q0 * out_stride + r] = a;
            out[(q0 + 1) * out_stride + r] = b;
        }
        q0 += 2;
    }
    for query in queries.chunks_exact(width).skip(q0) {
        for (r, row) in rows.chunks_exact(width).enumerate() {
            // SAFETY: features per caller; both slices have `width` elements.
            out[q0 * out_stride + r] = unsafe { dot_f32(row, query) };
        }
        q0 += 1;
    }
}

/// AVX2 twin of `accumulate_weighted_rows_f32_portable`: 32 columns in four registers
/// while every row passes; separate f32 products and sums, as in the portable body.
///
/// # Safety
/// The CPU must support AVX2 and FMA; the slices are laid out as
/// `accumulate_weighted_rows_f32_portable` documents.
#[target_feature(enable = "avx2,fma")]
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
            // SAFETY: j + 32 <= width = a.len().
            let mut regs = unsafe { [0, 8, 16, 24].map(|k| _mm256_loadu_ps(a.as_ptr().add(j + k))) };
            for (r, &pr) in p.iter().enumerate() {
                let pv = _mm256_set1_ps(pr);
                let base = r * row_stride + j;
                for (k, reg) in regs.iter_mut().enumerate() {
                    // SAFETY: base + 8k + 8 <= r * row_stride + width <= rows.len().
                    let v = unsafe { _mm256_loadu_ps(rows.as_ptr().add(base + 8 * k)) };
                    *reg = _mm256_add_ps(*reg, _mm256_mul_ps(pv, v));
                }
            }
            for (k, reg) in regs.iter().enumerate() {
                // SAFETY: j + 8k + 8 <= width = a.len().
                unsafe { _mm256_storeu_ps(a.as_mut_ptr().add(j + 8 * k), *reg) };
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
