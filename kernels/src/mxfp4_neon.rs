//! NEON bodies of the MXFP4 row kernels for aarch64, bit-identical to the portable ones in
//! `dot.rs` (the dense bodies are in `simd_neon.rs`).
//!
//! Owns: the 128-bit SIMD `unsafe` of `dot_mxfp4` and `mxfp4_accumulate_tokens` on
//! aarch64, visible only to `kernels`, whose `dispatch` calls them. Depends on the leaf
//! `dot` only. A `float64x2_t` holds two f64, so a group's 8 contract lanes take four
//! accumulators, `s[j]` holding lanes `2j..2j+2`: the group's sixteen decoded pairs
//! (elements `2m, 2m+1`) go in order to `s[m % 4]`, so element `t` lands in lane `t % 8`
//! and every lane receives its elements in element order. The tree: `s[0] + s[2]` is
//! `(b0, b1) = (s0+s4, s1+s5)`, `s[1] + s[3]` is `(b2, b3)`, a pairwise add gives
//! `(b0+b1, b2+b3)` and a scalar add their sum; times the group's scale, added to the row
//! total in group order; scale byte 255 skips the group.
//!
//! Products of an E2M1 value by an f32 activation are exact in f64, so the fused
//! multiply-adds round exactly like the portable multiply-then-add.
//! Must not: be called except through a `dispatch::DetectedIsa` for `Isa::Neon` (only
//! runtime detection of NEON makes one), call the dispatcher, reorder any addition, give a
//! register lane more than one contract lane, or widen a whole row (the nibbles are decoded
//! group by group, in registers).
//! Easy to break: the decode. Every E2M1 value as f64 has only its top 16 bits set (sign,
//! exponent, one mantissa bit; checked at compile time in [`TOP_BYTES`]), so two 16-entry
//! byte lookups (`vqtbl1q_u8`) give bits 56..64 and 48..56; zipping those into half-words,
//! then above zero half-words and above zero words, builds each f64 in place. The low
//! nibble of a packed byte is the EVEN element: the codes are zipped low nibble first.

use std::arch::aarch64::*;

use crate::dot::{e8m0_scale, E2M1_F64_HIGH_WORDS};

/// For each 4-bit code, bytes 7 and 6 (bits 56..64 and 48..56) of its E2M1 value as f64:
/// `[top, next]`, every other byte of the f64 being zero (checked here at compile time).
const TOP_BYTES: [[u8; 16]; 2] = {
    let mut t = [[0u8; 16]; 2];
    let mut n = 0;
    while n < 16 {
        let hi = E2M1_F64_HIGH_WORDS[n];
        assert!(hi & 0xFFFF == 0, "an E2M1 value needs more than its f64 top 16 bits");
        t[0][n] = (hi >> 24) as u8;
        t[1][n] = (hi >> 16) as u8;
        n += 1;
    }
    t
};

/// The two lookup tables of the decode, loaded once per body and only lent to helpers
/// that inline, so they stay in registers.
struct Tables {
    /// Byte 7 (sign and top exponent bits) of each code's f64.
    top: uint8x16_t,
    /// Byte 6 (low exponent bits and the mantissa bit) of each code's f64.
    next: uint8x16_t,
}

#[target_feature(enable = "neon")]
#[inline]
fn tables() -> Tables {
    // SAFETY: each table is 16 bytes; NEON loads need no alignment.
    unsafe { Tables { top: vld1q_u8(TOP_BYTES[0].as_ptr()), next: vld1q_u8(TOP_BYTES[1].as_ptr()) } }
}

/// The 32 E2M1 values of one group as f64 pairs: `v[m]` holds elements `2m, 2m + 1`.
///
/// # Safety
/// The CPU must support NEON; `group` must point at 16 readable bytes.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn decode_group(group: *const u8, t: &Tables) -> [float64x2_t; 16] {
    // SAFETY: the group's 16 bytes are readable per the caller; unaligned load.
    let bytes = unsafe { vld1q_u8(group) };
    let (lo, hi) = (vandq_u8(bytes, vdupq_n_u8(0x0F)), vshrq_n_u8::<4>(bytes));
    // Codes in element order: byte b's low nibble is element 2b, its high nibble 2b + 1.
    let codes = [vzip1q_u8(lo, hi), vzip2q_u8(lo, hi)];
    let (zero16, zero32) = (vdupq_n_u16(0), vdupq_n_u32(0));
    let mut v = [vdupq_n_f64(0.0); 16];
    for (c, &code) in codes.iter().enumerate() {
        let (top, next) = (vqtbl1q_u8(t.top, code), vqtbl1q_u8(t.next, code));
        // Half-words `next | top << 8`: elements 16c..16c+8, then 16c+8..16c+16.
        let halves = [vzip1q_u8(next, top), vzip2q_u8(next, top)];
        for (h, &half) in halves.iter().enumerate() {
            let half = vreinterpretq_u16_u8(half);
            // Words with the half-word on top: four elements each.
            let words = [vzip1q_u16(zero16, half), vzip2q_u16(zero16, half)];
            for (e, &word) in words.iter().enumerate() {
                let word = vreinterpretq_u32_u16(word);
                let at = 8 * c + 4 * h + 2 * e;
                // Double words with the word on top: the f64 values, two each.
                v[at] = vreinterpretq_f64_u32(vzip1q_u32(zero32, word));
                v[at + 1] = vreinterpretq_f64_u32(vzip2q_u32(zero32, word));
            }
        }
    }
    v
}

/// One group's unscaled dot product with the 8-lane contract.
///
/// # Safety
/// The CPU must support NEON; `xg` must point at 32 readable f64.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn group_dot(v: &[float64x2_t; 16], xg: *const f64) -> f64 {
    let mut s = [vdupq_n_f64(0.0); 4];
    for (m, &vm) in v.iter().enumerate() {
        // SAFETY: xg + 2m + 2 <= xg + 32, within the caller's 32 f64.
        let xm = unsafe { vld1q_f64(xg.add(2 * m)) };
        s[m % 4] = vfmaq_f64(s[m % 4], vm, xm);
    }
    // (b0, b1) and (b2, b3), then (b0 + b1, b2 + b3), then their sum.
    let pairs = vpaddq_f64(vaddq_f64(s[0], s[2]), vaddq_f64(s[1], s[3]));
    vgetq_lane_f64::<0>(pairs) + vgetq_lane_f64::<1>(pairs)
}

/// Adds groups `0..scales.len()` of one row to the running totals of `totals.len()`
/// tokens, token `k`'s activations starting at `xs[k * x_stride]`: each group's nibbles
/// are decoded once for every token; each token's arithmetic is exactly the portable
/// `accumulate_row`'s.
///
/// # Safety
/// The CPU must support NEON; `packed.len() == 16 * scales.len()` and, for
/// `n = totals.len() > 0`, `(n - 1) * x_stride + 32 * scales.len() <= xs.len()`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn mxfp4_accumulate_tokens(
    packed: &[u8],
    scales: &[u8],
    xs: &[f64],
    x_stride: usize,
    totals: &mut [f64],
) {
    let t = tables();
    for (g, &scale) in scales.iter().enumerate() {
        if scale == 255 {
            continue;
        }
        // SAFETY: group g owns packed[16g..16g+16]; in bounds by the length relations.
        let v = unsafe { decode_group(packed.as_ptr().add(16 * g), &t) };
        let s = e8m0_scale(scale);
        for (k, total) in totals.iter_mut().enumerate() {
            // SAFETY: token k owns xs[k * x_stride + 32g ..][..32], in bounds per the caller.
            *total += unsafe { group_dot(&v, xs.as_ptr().add(k * x_stride + 32 * g)) } * s;
        }
    }
}

/// NEON twin of `dot_mxfp4_portable`: the one-token case of [`mxfp4_accumulate_tokens`].
///
/// # Safety
/// The CPU must support NEON; `packed.len() * 2 == x.len()` and
/// `scales.len() * 32 == x.len()`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn dot_mxfp4(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    debug_assert!(packed.len() * 2 == x.len() && scales.len() * 32 == x.len());
    let mut total = [0.0f64];
    // SAFETY: NEON and lengths per the caller; one token, so the stride is never used.
    unsafe { mxfp4_accumulate_tokens(packed, scales, x, x.len(), &mut total) };
    total[0] as f32
}
