//! AVX-512 bodies of the row kernels, bit-identical to the portable ones in `dot.rs`.
//!
//! Owns: the only SIMD `unsafe` of the crate. Each function keeps the FP contract's lane
//! assignment exactly: dense rows accumulate element `i` into f64 lane `i % 16` (two
//! 8-lane registers, lanes 0..8 and 8..16) and reduce with the same scalar tree; MXFP4
//! groups accumulate element `t` into lane `t % 8` over the group's four 8-element chunks
//! in order, then reduce `(s0+s4, …)` and `(b0+b1)+(b2+b3)` exactly as the portable body.
//! Products of an f32/BF16/E2M1 weight by an f32 activation are exact in f64, so fused
//! multiply-adds round like the portable multiply-then-add.
//! Must not: be called without the CPU features (the dispatcher checks them once), or
//! reorder any addition.
//! Easy to break: element order of the nibbles (low nibble = even element) when they are
//! widened to 32-bit lookup indices.

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

/// The 32 E2M1 values of one MXFP4 group as four 8-lane f64 vectors, in element order
/// (low nibble of byte j = element 2j, high nibble = element 2j + 1).
///
/// Each 8-element chunk is 4 packed bytes: they are broadcast to every 64-bit lane (a load,
/// no shuffle), lane `l` shifts right by `4l` and keeps 4 bits — its element's nibble — and
/// a two-register permute looks the nibble up in the 16-entry f64 E2M1 table.
///
/// # Safety
/// The CPU must support AVX-512F; `group` must point at 16 readable bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn decode_group(group: *const u8, table: &Tables) -> [__m512d; 4] {
    let mut out = [_mm512_setzero_pd(); 4];
    for (q, v) in out.iter_mut().enumerate() {
        // SAFETY: bytes 4q..4q+4 (q < 4) lie within the group's 16 readable bytes.
        let word = unsafe { std::ptr::read_unaligned(group.add(4 * q) as *const u32) };
        let lanes = _mm512_set1_epi64(i64::from(word));
        let nibbles = _mm512_and_si512(_mm512_srlv_epi64(lanes, table.shifts), table.low4);
        *v = _mm512_permutex2var_pd(table.lo, nibbles, table.hi);
    }
    out
}

/// Constants of the MXFP4 decode, built once per kernel call.
#[cfg(target_arch = "x86_64")]
struct Tables {
    /// E2M1 values 0..8 and 8..16 as f64.
    lo: __m512d,
    hi: __m512d,
    /// Lane `l` shifts by `4l`.
    shifts: __m512i,
    low4: __m512i,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn tables() -> Tables {
    let v: [f64; 16] = E2M1.map(f64::from);
    // SAFETY: `v` holds 16 f64; unaligned loads.
    let (lo, hi) = unsafe { (_mm512_loadu_pd(v.as_ptr()), _mm512_loadu_pd(v.as_ptr().add(8))) };
    Tables { lo, hi, shifts: _mm512_setr_epi64(0, 4, 8, 12, 16, 20, 24, 28), low4: _mm512_set1_epi64(0xF) }
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
    let mut acc = _mm512_setzero_pd();
    for (k, vk) in v.iter().enumerate() {
        // SAFETY: xg + 8k .. xg + 8k + 8 lies within the caller's 32 f64.
        acc = _mm512_fmadd_pd(*vk, unsafe { _mm512_loadu_pd(xg.add(8 * k)) }, acc);
    }
    // The reduction tree in scalar code: no shuffle-port work (the decode already keeps
    // that port busy).
    let mut s = [0.0f64; 8];
    // SAFETY: `s` holds 8 f64.
    unsafe { _mm512_storeu_pd(s.as_mut_ptr(), acc) };
    ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))
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
            for (t, total) in totals[..n].iter_mut().enumerate() {
                // SAFETY: token chunk_start + t owns xs[(chunk_start + t) * cols ..][32g..32g+32].
                *total += unsafe { group_dot(&v, xs.as_ptr().add((chunk_start + t) * cols + 32 * g)) } * s;
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
