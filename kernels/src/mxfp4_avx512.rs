//! AVX-512 bodies of the MXFP4 kernels, bit-identical to `dot_mxfp4_portable`.
//!
//! Owns: the in-register nibble decode, the one-row body `dot_mxfp4` (eight groups' trees
//! reduced per instruction, eight scales applied per instruction, only the ordered
//! additions to the running total scalar) and the tokens body `mxfp4_accumulate_tokens`
//! (each group decoded once, eight tokens' trees per instruction). Every body keeps the contract exactly: a group accumulates element
//! `t` into lane `t % 8` over its four 8-element chunks in order, reduces `b_l = s_l + s_{l+4}`,
//! `(b0+b1)+(b2+b3)`, multiplies by the scale and adds that to the row's running f64
//! total, group after group; a scale byte of 255 adds nothing. Products of an E2M1 value
//! by an f32 activation are exact in f64, so fused multiply-adds round like the portable
//! multiply-then-add; `reduce8` does the tree's additions for eight groups (or eight
//! tokens' groups) per instruction with the same operands in each lane.
//! Both are visible only to `kernels`, whose `dispatch` calls them; this module depends on
//! the leaf `dot` only.
//! Must not: be called except through a `dispatch::DetectedIsa` for `Isa::Avx512` (only
//! runtime detection of AVX-512F and AVX-512BW makes one), call the dispatcher, or reorder
//! any addition.
//! Easy to break: the decode (see [`decode_pair`]): two 4-byte chunks per 64-bit broadcast,
//! chunk `A` in the even 32-bit lanes and `B` in the odd ones, one 16-entry `vpermd` of f64
//! high words (sign included); the rotate table in [`tables`] and the even/odd split must
//! change together. The low nibble of a packed byte is the EVEN element. Closures do not
//! inherit `#[target_feature]`: one that calls these helpers may compile to a call per
//! use instead of inline vector code (seen once, 1.5× slower) — check the disassembly
//! (`mxfp4_bound` times the bodies).

use std::arch::x86_64::*;

use crate::dot::{e8m0_scale, E2M1_F64_HIGH_WORDS};

/// Constants of the MXFP4 decode, built at the top of each body that decodes (a few loads
/// from read-only data) and only lent to helpers that inline, so they live in registers.
/// Never pass them by reference to a call: a release build once kept them for such a call
/// in a stack slot it had not aligned to 64 bytes and stored them with an aligned move — a
/// crash at every other stack depth (`every_body_runs_from_every_stack_alignment`).
struct Tables {
    /// Entry `n` (the 4-bit code, sign included): the high 32 bits of the f64 E2M1 value;
    /// its low 32 bits are zero for every code.
    hi_words: __m512i,
    /// 32-bit lanes `2l` and `2l + 1` rotate right by `4l`.
    shifts: __m512i,
    /// The high 32-bit half of every 64-bit lane.
    high_halves: __m512i,
}

#[target_feature(enable = "avx512f")]
fn tables() -> Tables {
    let hi = E2M1_F64_HIGH_WORDS.map(|w| w as i32);
    // SAFETY: `hi` holds 16 i32 (64 bytes); unaligned load.
    let hi_words = unsafe { _mm512_loadu_si512(hi.as_ptr().cast()) };
    Tables {
        hi_words,
        shifts: _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28),
        high_halves: _mm512_set1_epi64(-1 << 32),
    }
}

/// The sixteen E2M1 values of two consecutive 4-byte chunks `A` (bytes 0..4 at `src`) and
/// `B` (bytes 4..8) as two f64 vectors: element `l` of `A` in lane `l` of the first,
/// element `l` of `B` in lane `l` of the second.
///
/// The 8 bytes are broadcast to every 64-bit lane straight from memory, so 32-bit lane `2l`
/// holds `A`'s word and lane `2l + 1` `B`'s; both rotate right by `4l`, which brings element
/// `l`'s nibble to bits 0..3 (the junk above is ignored by the permute), and one 16-entry
/// `vpermd` looks up the value's high f64 word, sign included. `A`'s words move up into the
/// high half of their 64-bit lane, `B`'s already sit there and keep it: two f64 vectors
/// with low words 0, and only the permute on the shuffle port.
///
/// # Safety
/// The CPU must support AVX-512F; `src` must point at 8 readable bytes.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn decode_pair(src: *const u8, t: &Tables) -> [__m512d; 2] {
    // SAFETY: 8 readable bytes per the caller; an unaligned read the broadcast folds in.
    let pair = u64::from_le(unsafe { std::ptr::read_unaligned(src.cast::<u64>()) });
    // A rotate rather than a shift: the same low 4 bits, and no lane with a zero count
    // that the compiler would turn into a masked merge plus a register copy.
    let nib = _mm512_rorv_epi32(_mm512_set1_epi64(pair as i64), t.shifts);
    let hi = _mm512_permutexvar_epi32(nib, t.hi_words);
    [_mm512_castsi512_pd(_mm512_slli_epi64::<32>(hi)), _mm512_castsi512_pd(_mm512_and_si512(hi, t.high_halves))]
}

/// The 32 E2M1 values of one MXFP4 group as four 8-lane f64 vectors, in element order
/// (low nibble of byte j = element 2j, high nibble = element 2j + 1).
///
/// # Safety
/// The CPU must support AVX-512F; `group` must point at 16 readable bytes.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn decode_group(group: *const u8, t: &Tables) -> [__m512d; 4] {
    // SAFETY: bytes 0..8 and 8..16 lie within the group's 16 readable bytes.
    let ([v0, v1], [v2, v3]) = unsafe { (decode_pair(group, t), decode_pair(group.add(8), t)) };
    [v0, v1, v2, v3]
}

/// One group's eight contract lanes: lane `l` accumulates element `8q + l` of chunks
/// `q = 0..4`, in order.
///
/// # Safety
/// The CPU must support AVX-512F; `xg` must point at 32 readable f64.
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

/// Adds groups `0..scales.len()` of one row to `total`, in order (the one-row body).
///
/// Eight groups at a time: their lane vectors are reduced together by [`reduce8`] and
/// multiplied by their eight scales in one instruction each; only the eight additions to
/// the running total, which the contract orders, stay scalar. Leftover groups go one by one.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `packed.len() == 16 * scales.len()` and
/// `x.len() >= 32 * scales.len()`.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn accumulate_row(packed: &[u8], scales: &[u8], x: &[f64], total: &mut f64) {
    let t = &tables();
    let full = scales.len() / 8 * 8;
    let mut scaled = [0.0f64; 8];
    for first in (0..full).step_by(8) {
        // SAFETY: groups first..first + 8 own packed[16g..16g+16] and x[32g..32g+32], in
        // bounds by the length relations the caller guarantees.
        let lanes: [__m512d; 8] = std::array::from_fn(|k| unsafe {
            let g = first + k;
            group_lanes(&decode_group(packed.as_ptr().add(16 * g), t), x.as_ptr().add(32 * g))
        });
        // SAFETY: scale bytes first..first + 8 are in bounds (first + 8 <= full).
        let bytes = _mm512_cvtepu8_epi64(unsafe { _mm_loadl_epi64(scales.as_ptr().add(first).cast()) });
        let present = _mm512_cmpneq_epi64_mask(bytes, _mm512_set1_epi64(255));
        // 2^(byte − 127) from its IEEE-754 bits (exponent field byte − 127 + 1023); a byte
        // of 255 gives 2^128 here but is masked out below.
        let biased = _mm512_add_epi64(bytes, _mm512_set1_epi64(1023 - 127));
        let scale = _mm512_castsi512_pd(_mm512_slli_epi64::<52>(biased));
        // SAFETY: `scaled` holds 8 f64; unaligned store.
        unsafe { _mm512_storeu_pd(scaled.as_mut_ptr(), _mm512_mul_pd(reduce8(&lanes), scale)) };
        if present == 0xFF {
            // Every group has a scale (a byte of 255 is NaN in E8M0 and rare): straight-line
            // adds, no branch per group.
            for &group in &scaled {
                *total += group;
            }
        } else {
            for (k, &group) in scaled.iter().enumerate() {
                if present & (1 << k) != 0 {
                    *total += group;
                }
            }
        }
    }
    for (g, &scale) in scales.iter().enumerate().skip(full) {
        if scale == 255 {
            continue;
        }
        // SAFETY: group g is in bounds as above.
        let group = unsafe { group_dot(&decode_group(packed.as_ptr().add(16 * g), t), x.as_ptr().add(32 * g)) };
        *total += group * e8m0_scale(scale);
    }
}

/// AVX-512 twin of `dot_mxfp4_portable`.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `packed.len() * 2 == x.len()` and
/// `scales.len() * 32 == x.len()`.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn dot_mxfp4(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    let mut total = 0.0f64;
    // SAFETY: features and lengths per the caller.
    unsafe { accumulate_row(packed, scales, x, &mut total) };
    total as f32
}

/// The group sums of eight lane vectors, input `k`'s in lane `k`, each reduced with the
/// contract's tree: `b_l = s_l + s_{l+4}`, `c_0 = b_0 + b_1`, `c_1 = b_2 + b_3`, `c_0 + c_1`
/// — the additions of `group_dot`, eight groups per instruction.
#[target_feature(enable = "avx512f")]
#[inline]
fn reduce8(a: &[__m512d; 8]) -> __m512d {
    // [b(a_j)_0..4, b(a_{j+1})_0..4]: halves 0..4 of both inputs plus halves 4..8.
    let b = |j: usize| {
        _mm512_add_pd(
            _mm512_shuffle_f64x2::<0b01_00_01_00>(a[j], a[j + 1]),
            _mm512_shuffle_f64x2::<0b11_10_11_10>(a[j], a[j + 1]),
        )
    };
    // Inputs j..j+4 (A, B, C, D): [cA0, cC0, cA1, cC1, cB0, cD0, cB1, cD1].
    let c = |j: usize| {
        let (p, q) = (b(j), b(j + 2));
        _mm512_add_pd(_mm512_unpacklo_pd(p, q), _mm512_unpackhi_pd(p, q))
    };
    let (r, s) = (c(0), c(4));
    // c_0 of inputs 0..8 in order, then their c_1 (indices 8.. pick from `s`).
    let c0 = _mm512_setr_epi64(0, 4, 1, 5, 8, 12, 9, 13);
    let c1 = _mm512_setr_epi64(2, 6, 3, 7, 10, 14, 11, 15);
    _mm512_add_pd(_mm512_permutex2var_pd(r, c0, s), _mm512_permutex2var_pd(r, c1, s))
}

/// Adds groups `0..scales.len()` of one row to the running totals of `totals.len()`
/// tokens, token `k`'s activations starting at `xs[k * x_stride]`: each group is decoded
/// once for every token, and eight tokens' groups are reduced per [`reduce8`]. Each token's
/// arithmetic is exactly [`accumulate_row`]'s.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `packed.len() == 16 * scales.len()` and,
/// for `n = totals.len() > 0`, `(n - 1) * x_stride + 32 * scales.len() <= xs.len()`.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn mxfp4_accumulate_tokens(
    packed: &[u8],
    scales: &[u8],
    xs: &[f64],
    x_stride: usize,
    totals: &mut [f64],
) {
    let t = tables();
    let full = totals.len() / 8 * 8;
    for first in (0..full).step_by(8) {
        // SAFETY: first + 8 <= totals.len(); unaligned load.
        let mut sums = unsafe { _mm512_loadu_pd(totals.as_ptr().add(first)) };
        // Software-pipelined by one group: group g's lanes are computed in program order
        // next to group g − 1's reduction, whose inputs are ready by then, so the long
        // decode → FMA → tree chains of neighbouring groups overlap in the scheduler.
        let mut pending: Option<([__m512d; 8], f64)> = None;
        for (g, &scale) in scales.iter().enumerate() {
            if scale == 255 {
                continue;
            }
            // SAFETY: group g owns packed[16g..16g+16]; token first + k < n owns
            // xs[(first + k) * x_stride + 32g ..][..32], in bounds per the caller.
            let lanes: [__m512d; 8] = unsafe {
                let v = decode_group(packed.as_ptr().add(16 * g), &t);
                std::array::from_fn(|k| group_lanes(&v, xs.as_ptr().add((first + k) * x_stride + 32 * g)))
            };
            if let Some((previous, s)) = pending.replace((lanes, e8m0_scale(scale))) {
                // total += group · s per token: a multiply then an add, as in the portable body.
                sums = _mm512_add_pd(sums, _mm512_mul_pd(reduce8(&previous), _mm512_set1_pd(s)));
            }
        }
        if let Some((previous, s)) = pending {
            sums = _mm512_add_pd(sums, _mm512_mul_pd(reduce8(&previous), _mm512_set1_pd(s)));
        }
        // SAFETY: as the load above.
        unsafe { _mm512_storeu_pd(totals.as_mut_ptr().add(first), sums) };
    }
    for (k, total) in totals.iter_mut().enumerate().skip(full) {
        // SAFETY: token k's activations are in bounds per the caller.
        unsafe { accumulate_row(packed, scales, &xs[k * x_stride..], total) };
    }
}

/// Adds groups `0..row_groups` of `totals.len() / 4` rows (row `r`'s `row_groups` groups
/// at `packed[16 * r * row_groups..]` and `scales[r * row_groups..]`) to the running totals
/// of four tokens, token `k`'s activations at `xs[k * x_stride..]`; `totals` is
/// `[rows][4]`. The matrix × matrix body: per group, the four tokens' 32 activations stay
/// in registers while every row's group is decoded once and meets all four, two rows'
/// eight (row, token) lane vectors reduced together by [`reduce8`]. Each (row, token) total
/// receives exactly [`accumulate_row`]'s operations in its order: lanes from zero over the
/// four chunks, the tree, times the scale, added group after group; a scale of 255 adds
/// nothing. An odd last row goes through [`mxfp4_accumulate_tokens`].
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `packed.len() == 16 * scales.len()`,
/// `scales.len() == rows * row_groups`, `totals.len() == 4 * rows`, and
/// `3 * x_stride + 32 * row_groups <= xs.len()`.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn mxfp4_rows_tokens4(
    packed: &[u8],
    scales: &[u8],
    row_groups: usize,
    xs: &[f64],
    x_stride: usize,
    totals: &mut [f64],
) {
    let t = tables();
    let rows = totals.len() / 4;
    let pairs = rows / 2;
    for g in 0..row_groups {
        // SAFETY: token k's group g is xs[k * x_stride + 32g ..][..32], in bounds per the caller.
        let x: [[__m512d; 4]; 4] = std::array::from_fn(|k| {
            std::array::from_fn(|q| unsafe { _mm512_loadu_pd(xs.as_ptr().add(k * x_stride + 32 * g + 8 * q)) })
        });
        for p in 0..pairs {
            let (a, b) = ((2 * p) * row_groups + g, (2 * p + 1) * row_groups + g);
            let (sa, sb) = (scales[a], scales[b]);
            if sa == 255 && sb == 255 {
                continue;
            }
            // SAFETY: groups a and b own packed[16a..][..16] and packed[16b..][..16].
            let lanes: [__m512d; 8] = unsafe {
                let wa = decode_group(packed.as_ptr().add(16 * a), &t);
                let la: [__m512d; 4] = std::array::from_fn(|k| lanes_in_registers(&wa, &x[k]));
                let wb = decode_group(packed.as_ptr().add(16 * b), &t);
                let lb: [__m512d; 4] = std::array::from_fn(|k| lanes_in_registers(&wb, &x[k]));
                [la[0], la[1], la[2], la[3], lb[0], lb[1], lb[2], lb[3]]
            };
            // Row a's scale in lanes 0..4, row b's in 4..8: two broadcasts and one insert.
            let scale = _mm512_insertf64x4::<1>(_mm512_set1_pd(e8m0_scale(sa)), _mm256_set1_pd(e8m0_scale(sb)));
            let present: __mmask8 = if sa == 255 {
                0xF0
            } else if sb == 255 {
                0x0F
            } else {
                0xFF
            };
            // SAFETY: totals[8p..8p + 8] are rows 2p and 2p + 1's four tokens (in bounds).
            unsafe {
                let at = totals.as_mut_ptr().add(8 * p);
                let sums = _mm512_loadu_pd(at);
                let added = _mm512_mask_add_pd(sums, present, sums, _mm512_mul_pd(reduce8(&lanes), scale));
                _mm512_storeu_pd(at, added);
            }
        }
    }
    if rows % 2 == 1 {
        let r = rows - 1;
        let groups = &scales[r * row_groups..][..row_groups];
        // SAFETY: features and lengths per the caller (the last row's bytes and 4 tokens).
        unsafe {
            mxfp4_accumulate_tokens(
                &packed[16 * r * row_groups..][..16 * row_groups],
                groups,
                xs,
                x_stride,
                &mut totals[4 * r..],
            )
        };
    }
}

/// [`group_lanes`] with the activations already in registers.
#[target_feature(enable = "avx512f")]
#[inline]
fn lanes_in_registers(v: &[__m512d; 4], x: &[__m512d; 4]) -> __m512d {
    let mut acc = _mm512_setzero_pd();
    for (vk, xk) in v.iter().zip(x) {
        acc = _mm512_fmadd_pd(*vk, *xk, acc);
    }
    acc
}
