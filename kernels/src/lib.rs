//! k3-kernels: the numeric kernels and the engine's floating-point contract.
//!
//! Owns: every dot product, matrix-vector and batched product, norm and activation the
//! model uses, each with a plain `_ref` twin in [`reference`] that tests compare against
//! bit for bit.
//!
//! # The FP contract (one canonical order, whatever the thread count)
//! * Activations are f32. Every dot product of a weight row with an activation vector
//!   accumulates in **f64** and rounds to f32 once. A product of an f32 (or widened BF16,
//!   or E2M1 value) with an f32 is exact in f64, so a fused multiply-add and a separate
//!   multiply-then-add give the same bits: SIMD bodies may use either.
//! * Dense rows (F32, BF16): 16 partial sums, element `i` to lane `i % 16`; reduced as
//!   `b_l = (a_l + a_{l+4}) + (a_{l+8} + a_{l+12})` for `l = 0..4`, then
//!   `(b0 + b1) + (b2 + b3)`; leftover elements (`len % 16`) added sequentially after.
//! * MXFP4 rows: per 32-element group, 8 partial sums (element `t` to lane `t % 8`),
//!   reduced `(s0+s4, s1+s5, s2+s6, s3+s7)` then `(b0+b1)+(b2+b3)`, multiplied by the
//!   group's `2^(scale-127)` and added to the row total in group order. Scale byte 255
//!   contributes nothing.
//! * Norms: sequential f64 sum of squares, reciprocal square root in f64 cast to f32,
//!   products in f32.
//! * MLA attention in latent space (the engine's `model::mla`): a score is `dot_f32` of a cached
//!   `[latent | k_rope]` row with an absorbed query (`dot_f32_queries` does a block of
//!   rows against a group of heads, each pair exactly `dot_f32`); the softmax weights mix
//!   rows element by element in row order, an f32 product then an f32 sum, never fused
//!   (`accumulate_weighted_rows_f32`); a transposed product (the engine's `Matrix::transposed_rows_matvec`)
//!   sums each output's rows in order in f64 (`accumulate_scaled_row_*`) and rounds once.
//! * Threads split only independent outputs (rows). A batched product computes every
//!   (row, token) pair with exactly the single-vector arithmetic.
//!
//! * Bodies: portable (`dot.rs`), AVX2 + FMA (`simd_avx2.rs`) and AVX-512 (`simd_x86.rs`
//!   dense, `mxfp4_avx512.rs` MXFP4) on x86-64, NEON (`simd_neon.rs`
//!   dense, `mxfp4_neon.rs` MXFP4) on aarch64, picked by `dispatch` at run time; all
//!   bit-identical, so the choice never shows in the logits.
//! * Batched products (`bf16_batch`, `mxfp4_batch`) block rows, columns and tokens for the
//!   cache but keep each (row, token)'s lanes and groups in the one-token order.
//!
//! # Names and dependencies (one way only)
//! Each kernel is `<op>_<dtype>` (`dot_f32`, `dot_bf16`, `dot_bf16_rows4`, `dot_mxfp4`,
//! `mxfp4_accumulate_tokens`, `bf16_accumulate_tokens`): the dispatched entry
//! `dispatch::<op>_<dtype>` (re-exported here) runs the current body; the method
//! `dispatch::DetectedIsa::<op>_<dtype>` runs an explicit, detected body (twin tests,
//! benchmarks); `dot::<op>_<dtype>_portable` is the portable body,
//! `reference::<op>_<dtype>_ref` the plain twin, and each SIMD module's
//! body of the same name is private to this crate. `dot` (portable bodies and element
//! helpers) imports nothing else of this crate; the `simd_*`, `mxfp4_avx512` and `mxfp4_neon`
//! bodies import only `dot`; `dispatch` imports both; `mxfp4_batch`, `bf16_batch` and the engine's `Matrix` call `dispatch`. Only a
//! `dispatch::DetectedIsa`, which runtime detection alone constructs, reaches a SIMD body.
//!
//! Must not: split one reduction across threads, or use fast-math style reassociation.
//! Easy to break: the lane assignment and the reduction tree; change them only together
//! with the `_ref` twins, and the logits of every fixture will move.

pub mod activation;
pub mod bf16_batch;
pub mod dispatch;
pub mod dot;
pub mod matvec;
#[cfg(target_arch = "x86_64")]
mod mxfp4_avx512;
pub mod mxfp4_batch;
#[cfg(target_arch = "aarch64")]
mod mxfp4_neon;
pub mod norm;
pub mod reference;
#[cfg(target_arch = "x86_64")]
mod simd_avx2;
#[cfg(target_arch = "aarch64")]
mod simd_neon;
#[cfg(target_arch = "x86_64")]
mod simd_x86;

pub use activation::{sigmoid, silu, situ_glu};
pub use dispatch::{
    accumulate_weighted_rows_f32, bf16_accumulate_tokens, dot_bf16, dot_bf16_rows4, dot_f32, dot_f32_queries,
    dot_mxfp4, mxfp4_accumulate_tokens, DetectedIsa, Isa,
};
pub use dot::{bf16_to_f32, decode_mxfp4_row, widen, E2M1};
pub use matvec::{matmul_rows, matvec_rows, RowDot};
pub use norm::{l2norm, rms_inverse, rmsnorm};
