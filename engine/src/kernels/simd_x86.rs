//! AVX-512 bodies of the row kernels, bit-identical to the portable ones in `dot.rs`.
//!
//! Owns: the only SIMD `unsafe` of the crate. Each function keeps the FP contract's lane
//! assignment exactly: dense rows accumulate element `i` into f64 lane `i % 16` (two
//! 8-lane registers, lanes 0..8 and 8..16) and reduce with the same scalar tree; MXFP4
//! groups accumulate element `t` into lane `t % 8` over the group's four 8-element chunks
//! in order, then reduce `(s0+s4, …)` and `(b0+b1)+(b2+b3)` exactly as the portable body
//! (the batched body does those additions for eight tokens per instruction, lane `k` =
//! token `k`, with the same operands in each lane).
//! Products of an f32/BF16/E2M1 weight by an f32 activation are exact in f64, so fused
//! multiply-adds round like the portable multiply-then-add.
//! Must not: be called without the CPU features (the dispatcher checks them once), or
//! reorder any addition.
//! Easy to break: the MXFP4 decode (see [`decode_pair`]): two 4-byte chunks per 64-bit
//! broadcast, chunk `A` in the even 32-bit lanes and `B` in the odd ones, one 16-entry
//! `vpermd` of f64 high words (sign included); the shift table in [`tables`] and the
//! even/odd split must change together. The low nibble of a packed byte is the EVEN
//! element.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::kernels::dot::{e8m0_scale, reduce16};
use crate::kernels::E2M1;

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
pub unsafe fn dot_f32_avx512(w: &[f32], x: &[f64]) -> f32 {
    // SAFETY: the loader reads w[i..i+16] with i + 16 <= w.len(); features per caller.
    unsafe { dot16_avx512(w.len(), x, |i| _mm512_loadu_ps(w.as_ptr().add(i)), |j| f64::from(w[j])) }
}

/// AVX-512 twin of `dot_bf16_portable`.
///
/// # Safety
/// The CPU must support AVX-512F, and `w.len() == x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_bf16_avx512(w: &[u16], x: &[f64]) -> f32 {
    let load = |i: usize| {
        // SAFETY: reads 16 u16 (32 bytes) at w[i..i+16], in bounds by the caller's loop.
        let raw = unsafe { _mm256_loadu_si256(w.as_ptr().add(i) as *const __m256i) };
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)))
    };
    let tail = |j: usize| f64::from(f32::from_bits(u32::from(w[j]) << 16));
    // SAFETY: features per caller; loader in bounds.
    unsafe { dot16_avx512(w.len(), x, load, tail) }
}

/// Constants of the MXFP4 decode, built once per kernel call.
#[cfg(target_arch = "x86_64")]
struct Tables {
    /// Entry `n` (the 4-bit code, sign included): the high 32 bits of the f64 E2M1 value;
    /// its low 32 bits are zero for every code.
    hi_words: __m512i,
    /// 32-bit lanes `2l` and `2l + 1` right-shift by `4l`.
    shifts: __m512i,
    /// The high 32-bit half of every 64-bit lane.
    high_halves: __m512i,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn tables() -> Tables {
    let hi: [i32; 16] = std::array::from_fn(|n| {
        let bits = f64::from(E2M1[n]).to_bits();
        debug_assert_eq!(bits & 0xFFFF_FFFF, 0, "E2M1 values have 20 significant bits at most");
        (bits >> 32) as u32 as i32
    });
    // SAFETY: `hi` holds 16 i32 (64 bytes); unaligned load.
    let hi_words = unsafe { _mm512_loadu_si512(hi.as_ptr().cast()) };
    Tables {
        hi_words,
        shifts: _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28),
        high_halves: _mm512_set1_epi64(-1 << 32),
    }
}

/// The sixteen E2M1 values of two consecutive 4-byte chunks `A` (bytes 0..4 of `pair`,
/// little-endian) and `B` (bytes 4..8) as two f64 vectors: element `l` of `A` in lane `l`
/// of the first, element `l` of `B` in lane `l` of the second.
///
/// The 8 bytes are broadcast to every 64-bit lane, so 32-bit lane `2l` holds `A`'s word
/// and lane `2l + 1` `B`'s; both shift right by `4l`, which brings element `l`'s nibble to
/// bits 0..3 (the junk above is ignored by the permute), and one 16-entry `vpermd` looks
/// up the value's high f64 word, sign included. `A`'s words move up into the high half of
/// their 64-bit lane, `B`'s already sit there and keep it: two f64 vectors with low words
/// 0, and only the permute on the shuffle port.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn decode_pair(pair: u64, t: &Tables) -> [__m512d; 2] {
    let nib = _mm512_srlv_epi32(_mm512_set1_epi64(pair as i64), t.shifts);
    let hi = _mm512_permutexvar_epi32(nib, t.hi_words);
    [_mm512_castsi512_pd(_mm512_slli_epi64::<32>(hi)), _mm512_castsi512_pd(_mm512_and_si512(hi, t.high_halves))]
}

/// The 32 E2M1 values of one MXFP4 group as four 8-lane f64 vectors, in element order
/// (low nibble of byte j = element 2j, high nibble = element 2j + 1).
///
/// # Safety
/// The CPU must support AVX-512F; `group` must point at 16 readable bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn decode_group(group: *const u8, t: &Tables) -> [__m512d; 4] {
    // SAFETY: bytes 0..8 and 8..16 lie within the group's 16 readable bytes.
    let (a, b) = unsafe {
        (
            u64::from_le(std::ptr::read_unaligned(group.cast::<u64>())),
            u64::from_le(std::ptr::read_unaligned(group.add(8).cast::<u64>())),
        )
    };
    let [v0, v1] = decode_pair(a, t);
    let [v2, v3] = decode_pair(b, t);
    [v0, v1, v2, v3]
}

/// One group's eight contract lanes: lane `l` accumulates element `8q + l` of chunks
/// `q = 0..4`, in order.
///
/// # Safety
/// The CPU must support AVX-512F; `xg` must point at 32 readable f64.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn group_lanes(v: &[__m512d; 4], xg: *const f64) -> __m512d {
    let mut acc = _mm512_setzero_pd();
    for (k, vk) in v.iter().enumerate() {
        // SAFETY: xg + 8k .. xg + 8k + 8 lies within the caller's 32 f64.
        acc = _mm512_fmadd_pd(*vk, unsafe { _mm512_loadu_pd(xg.add(8 * k)) }, acc);
    }
    acc
}

/// One group's dot product with the 8-lane contract: lanes over the four chunks in order,
/// then `(s0+s4, s1+s5, s2+s6, s3+s7)` and `(b0+b1)+(b2+b3)`.
///
/// # Safety
/// The CPU must support AVX-512F; `xg` must point at 32 readable f64.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn group_dot(v: &[__m512d; 4], xg: *const f64) -> f64 {
    // SAFETY: per the caller.
    let acc = unsafe { group_lanes(v, xg) };
    // b_l = s_l + s_{l+4} as one 256-bit add (one extract on the shuffle port), then
    // (b0 + b1) + (b2 + b3) in scalar code.
    let b = _mm256_add_pd(_mm512_castpd512_pd256(acc), _mm512_extractf64x4_pd::<1>(acc));
    let mut s = [0.0f64; 4];
    // SAFETY: `s` holds 4 f64; unaligned store.
    unsafe { _mm256_storeu_pd(s.as_mut_ptr(), b) };
    (s[0] + s[1]) + (s[2] + s[3])
}

/// AVX-512 twin of `dot_mxfp4_portable`.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `packed.len() * 2 == x.len()` and
/// `scales.len() * 32 == x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub unsafe fn dot_mxfp4_avx512(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    let lut = tables();
    let mut total = 0.0f64;
    for (g, &scale) in scales.iter().enumerate() {
        if scale == 255 {
            continue;
        }
        // SAFETY: group g owns packed[16g..16g+16] and x[32g..32g+32], in bounds by the
        // length relations the caller guarantees.
        let group = unsafe { group_dot(&decode_group(packed.as_ptr().add(16 * g), &lut), x.as_ptr().add(32 * g)) };
        total += group * e8m0_scale(scale);
    }
    total as f32
}

/// The group sums of eight tokens' lane vectors, token `k`'s in lane `k`, each reduced
/// with the contract's tree: `b_l = s_l + s_{l+4}`, `c_0 = b_0 + b_1`, `c_1 = b_2 + b_3`,
/// `c_0 + c_1` — the additions of `group_dot`, eight tokens per instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn reduce8(a: &[__m512d; 8]) -> __m512d {
    // [b(a_j)_0..4, b(a_{j+1})_0..4]: halves 0..4 of both tokens plus halves 4..8.
    let b = |j: usize| {
        _mm512_add_pd(
            _mm512_shuffle_f64x2::<0b01_00_01_00>(a[j], a[j + 1]),
            _mm512_shuffle_f64x2::<0b11_10_11_10>(a[j], a[j + 1]),
        )
    };
    // Tokens j..j+4 (A, B, C, D): [cA0, cC0, cA1, cC1, cB0, cD0, cB1, cD1].
    let c = |j: usize| {
        let (p, q) = (b(j), b(j + 2));
        _mm512_add_pd(_mm512_unpacklo_pd(p, q), _mm512_unpackhi_pd(p, q))
    };
    let (r, s) = (c(0), c(4));
    // c_0 of tokens 0..8 in order, then their c_1 (indices 8.. pick from `s`).
    let c0 = _mm512_setr_epi64(0, 4, 1, 5, 8, 12, 9, 13);
    let c1 = _mm512_setr_epi64(2, 6, 3, 7, 10, 14, 11, 15);
    _mm512_add_pd(_mm512_permutex2var_pd(r, c0, s), _mm512_permutex2var_pd(r, c1, s))
}

/// MXFP4 row against `n` tokens at once: each group's nibbles are decoded once and used
/// for every token; each token's arithmetic is exactly `dot_mxfp4_avx512`'s.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `xs.len() == out.len() * cols` with
/// `cols == packed.len() * 2 == scales.len() * 32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub unsafe fn dot_mxfp4_batch_avx512(packed: &[u8], scales: &[u8], xs: &[f64], out: &mut [f32]) {
    let cols = packed.len() * 2;
    let lut = tables();
    let mut totals = [0.0f64; 64];
    for chunk_start in (0..out.len()).step_by(64) {
        let n = (out.len() - chunk_start).min(64);
        totals[..n].fill(0.0);
        for (g, &scale) in scales.iter().enumerate() {
            if scale == 255 {
                continue;
            }
            // SAFETY: group g owns packed[16g..16g+16]; in bounds by the length relations.
            let v = unsafe { decode_group(packed.as_ptr().add(16 * g), &lut) };
            let s = e8m0_scale(scale);
            // SAFETY: t < n and token chunk_start + t owns xs[(chunk_start + t) * cols ..]
            // [32g..32g+32], in bounds by the length relations.
            let x_at = |t: usize| unsafe { xs.as_ptr().add((chunk_start + t) * cols + 32 * g) };
            let mut t = 0;
            while t + 8 <= n {
                // SAFETY: features per caller; x_at(t + k) points at 32 readable f64.
                let lanes: [__m512d; 8] = std::array::from_fn(|k| unsafe { group_lanes(&v, x_at(t + k)) });
                // total += group · s per token: a multiply then an add, as in the portable body.
                // SAFETY: t + 8 <= n <= 64 = totals.len(); unaligned load and store.
                unsafe {
                    let p = totals.as_mut_ptr().add(t);
                    let sum = _mm512_add_pd(_mm512_loadu_pd(p), _mm512_mul_pd(reduce8(&lanes), _mm512_set1_pd(s)));
                    _mm512_storeu_pd(p, sum);
                }
                t += 8;
            }
            for (t, total) in totals[..n].iter_mut().enumerate().skip(t) {
                // SAFETY: features per caller; x_at(t) points at 32 readable f64.
                *total += unsafe { group_dot(&v, x_at(t)) } * s;
            }
        }
        for (o, &t) in out[chunk_start..chunk_start + n].iter_mut().zip(&totals[..n]) {
            *o = t as f32;
        }
    }
}

/// Four BF16 rows against one activation: each row's lanes, order and reduction are
/// exactly `dot_bf16_avx512`'s; the rows only share the activation loads, which gives the
/// CPU four independent accumulation chains.
///
/// # Safety
/// The CPU must support AVX-512F; every row has `x.len()` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_bf16_rows4_avx512(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    let n = x.len();
    let full = n / 16 * 16;
    let mut lo = [_mm512_setzero_pd(); 4];
    let mut hi = [_mm512_setzero_pd(); 4];
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 <= full <= n = every row's length and x's length.
        let (x_lo, x_hi) = unsafe { (_mm512_loadu_pd(x.as_ptr().add(i)), _mm512_loadu_pd(x.as_ptr().add(i + 8))) };
        for r in 0..4 {
            let raw = unsafe { _mm256_loadu_si256(w[r].as_ptr().add(i) as *const __m256i) };
            let wf = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)));
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
            total += f64::from(f32::from_bits(u32::from(w[r][j]) << 16)) * xj;
        }
        out[r] = total as f32;
    }
    out
}

/// Sum of `data` with eight independent 16-lane accumulators: a memory-read probe for
/// benchmarks (its rounding order is not part of the model's FP contract).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub unsafe fn read_sum_avx512(data: &[f32]) -> f32 {
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
