//! Picks the kernel bodies from what the CPU supports, and is the only way to reach a
//! SIMD body.
//!
//! Owns: [`Isa`] (the *name* of an instruction-set level, what `--isa` parses and prints),
//! [`DetectedIsa`] (the *proof* that this CPU runs that level's bodies), the choice
//! ([`available`], [`best`], [`current`], [`select`]), and the one dispatched entry per
//! kernel: [`dot_f32`], [`dot_bf16`], [`dot_bf16_rows4`], [`dot_mxfp4`],
//! [`mxfp4_accumulate_tokens`], [`dot_f32_queries`] and [`accumulate_weighted_rows_f32`],
//! each running the [`current`] body (what `Matrix` and MLA attention call), and the same kernels as methods of [`DetectedIsa`] for an explicit body (what the twin
//! tests and benchmarks call). Depends on the portable bodies in `dot` and the SIMD bodies
//! in `simd_avx2`, `simd_x86` and `mxfp4_avx512` (x86-64) and `simd_neon` and `mxfp4_neon`
//! (aarch64); none of them depends on this module.
//! Must not: change results: every body is bit-identical to the portable one (the twin
//! tests run each available body against the reference on this host), which is also why
//! `select` may switch bodies at any time (benchmarks use it to time each body).
//! Easy to break: the soundness of every `unsafe` call below rests on one invariant — a
//! `DetectedIsa` holding `Avx2`, `Avx512` or `Neon` exists only if runtime detection found
//! that level's features. Its field is private and only [`DetectedIsa::detect`] (and
//! `DetectedIsa::portable`) construct it; never add a public constructor, a `From<Isa>`,
//! a `Default` or a deserialiser, and keep `cpu_runs` checking every feature the bodies
//! enable.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use crate::dot;
#[cfg(target_arch = "x86_64")]
use crate::{mxfp4_avx512, simd_avx2, simd_x86};
#[cfg(target_arch = "aarch64")]
use crate::{mxfp4_neon, simd_neon};

/// The name of an instruction-set level with its own kernel bodies. A name only: running
/// a body needs a [`DetectedIsa`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Portable,
    /// x86-64 AVX2 + FMA (256-bit registers).
    Avx2,
    /// x86-64 AVX-512 F + BW.
    Avx512,
    /// aarch64 Advanced SIMD (NEON, 128-bit registers).
    Neon,
}

impl Isa {
    /// Every level, slowest first among those one CPU can have: portable, then the x86-64
    /// levels (AVX2 before AVX-512), then NEON (an aarch64 CPU runs only portable and NEON,
    /// an x86-64 one never NEON).
    pub const ALL: [Isa; 4] = [Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Neon];

    /// The lowercase name `k3 bench kernels --isa` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Isa {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Isa::ALL.into_iter().find(|isa| isa.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Isa::ALL.iter().map(|isa| isa.name()).collect();
            format!("unknown instruction set `{s}` (one of: {})", names.join(", "))
        })
    }
}

/// Whether this CPU has every feature the `isa` bodies enable with `#[target_feature]`.
fn cpu_runs(isa: Isa) -> bool {
    match isa {
        Isa::Portable => true,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
        #[cfg(target_arch = "x86_64")]
        // Every AVX-512 body has its own twin; the level still asks for AVX2 and FMA (every
        // AVX-512 CPU has them) so that it is never weaker than the level below.
        Isa::Avx512 => {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        Isa::Avx2 | Isa::Avx512 => false,
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
        #[cfg(not(target_arch = "aarch64"))]
        Isa::Neon => false,
    }
}

/// A level asked for ([`DetectedIsa::detect`]) that this CPU does not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this CPU cannot run the {isa} kernels (it runs: {runs})")]
pub struct UnsupportedIsa {
    /// The level asked for.
    pub isa: Isa,
    /// The levels this CPU runs, by name, comma-separated.
    pub runs: String,
}

/// Proof that this CPU runs the kernel bodies of one [`Isa`]: the only key to a SIMD body.
///
/// **Invariant:** a `DetectedIsa` holding `Avx2` exists only if runtime detection found
/// AVX2 and FMA, one holding `Avx512` only if it found AVX-512F, AVX-512BW, AVX2 and FMA,
/// one holding `Neon` only if it found NEON (aarch64 Advanced SIMD). The field is
/// private, so outside this module the only ways to get one are [`DetectedIsa::detect`],
/// [`DetectedIsa::portable`], [`available`], [`best`] and [`current`]; a struct literal does
/// not compile:
///
/// ```compile_fail,E0451
/// use k3_kernels::dispatch::{DetectedIsa, Isa};
/// let forged = DetectedIsa { isa: Isa::Avx512 };
/// ```
///
/// Its methods run one kernel on this body; they are safe because of the invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetectedIsa {
    isa: Isa,
}

impl DetectedIsa {
    /// `isa`'s bodies, if this CPU runs them; else an error naming `isa` and the levels the
    /// CPU has.
    pub fn detect(isa: Isa) -> Result<DetectedIsa, UnsupportedIsa> {
        if cpu_runs(isa) {
            return Ok(DetectedIsa { isa });
        }
        let runs = available().iter().map(|body| body.isa.name()).collect::<Vec<_>>().join(", ");
        Err(UnsupportedIsa { isa, runs })
    }

    /// The portable bodies, which every CPU runs.
    pub const fn portable() -> DetectedIsa {
        DetectedIsa { isa: Isa::Portable }
    }

    /// The level this proves.
    pub fn isa(self) -> Isa {
        self.isa
    }

    /// `dot_f32` on this body: `Σ w[i]·x[i]` for an f32 row, `x` the activation widened
    /// to f64; panics unless `w.len() == x.len()`.
    pub fn dot_f32(self, w: &[f32], x: &[f64]) -> f32 {
        assert_eq!(w.len(), x.len(), "dot_f32 lengths");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe { simd_x86::dot_f32(w, x) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant); lengths checked above.
            Isa::Avx2 => unsafe { simd_avx2::dot_f32(w, x) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { simd_neon::dot_f32(w, x) },
            _ => dot::dot_f32_portable(w, x),
        }
    }

    /// `dot_bf16` on this body: `Σ w[i]·x[i]` for a BF16 row given as raw bits; panics
    /// unless `w.len() == x.len()`.
    pub fn dot_bf16(self, w: &[u16], x: &[f64]) -> f32 {
        assert_eq!(w.len(), x.len(), "dot_bf16 lengths");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `DetectedIsa::dot_f32` (the type's invariant; lengths checked).
            Isa::Avx512 => unsafe { simd_x86::dot_bf16(w, x) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `DetectedIsa::dot_f32` (the type's invariant; lengths checked).
            Isa::Avx2 => unsafe { simd_avx2::dot_bf16(w, x) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { simd_neon::dot_bf16(w, x) },
            _ => dot::dot_bf16_portable(w, x),
        }
    }

    /// `dot_bf16_rows4` on this body: four BF16 rows against one activation, each
    /// bit-identical to [`DetectedIsa::dot_bf16`]; panics unless every row has `x.len()`
    /// elements.
    pub fn dot_bf16_rows4(self, w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
        assert!(w.iter().all(|r| r.len() == x.len()), "dot_bf16_rows4 lengths");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe { simd_x86::dot_bf16_rows4(w, x) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant); lengths checked above.
            Isa::Avx2 => unsafe { simd_avx2::dot_bf16_rows4(w, x) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { simd_neon::dot_bf16_rows4(w, x) },
            _ => dot::dot_bf16_rows4_portable(w, x),
        }
    }

    /// `dot_mxfp4` on this body: `Σ w[i]·x[i]` for one packed MXFP4 row; panics unless
    /// `packed.len() * 2 == x.len()` and `scales.len() * 32 == x.len()`.
    pub fn dot_mxfp4(self, packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
        assert!(packed.len() * 2 == x.len() && scales.len() * 32 == x.len(), "dot_mxfp4 lengths");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `DetectedIsa::dot_f32` (the type's invariant); the MXFP4 length
            // relations are checked above.
            Isa::Avx512 => unsafe { mxfp4_avx512::dot_mxfp4(packed, scales, x) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `DetectedIsa::dot_f32` (the type's invariant); the MXFP4 length
            // relations are checked above.
            Isa::Avx2 => unsafe { simd_avx2::dot_mxfp4(packed, scales, x) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { mxfp4_neon::dot_mxfp4(packed, scales, x) },
            _ => dot::dot_mxfp4_portable(packed, scales, x),
        }
    }

    /// `mxfp4_accumulate_tokens` on this body: adds groups `0..scales.len()` of one MXFP4
    /// row to the running f64 totals of `totals.len()` tokens, token `k`'s activations for
    /// those groups starting at `xs[k * x_stride]`; each token's result is the one
    /// [`DetectedIsa::dot_mxfp4`] reaches when its groups arrive in order, however the row
    /// is split into group ranges. Panics unless `packed.len() == 16 * scales.len()` and
    /// the last token's groups lie within `xs`.
    pub fn mxfp4_accumulate_tokens(
        self,
        packed: &[u8],
        scales: &[u8],
        xs: &[f64],
        x_stride: usize,
        totals: &mut [f64],
    ) {
        let n = totals.len();
        assert!(packed.len() == 16 * scales.len(), "mxfp4_accumulate_tokens packed length");
        assert!(n == 0 || (n - 1) * x_stride + 32 * scales.len() <= xs.len(), "mxfp4_accumulate_tokens activations");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe { mxfp4_avx512::mxfp4_accumulate_tokens(packed, scales, xs, x_stride, totals) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant); lengths checked above.
            Isa::Avx2 => unsafe { simd_avx2::mxfp4_accumulate_tokens(packed, scales, xs, x_stride, totals) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { mxfp4_neon::mxfp4_accumulate_tokens(packed, scales, xs, x_stride, totals) },
            _ => dot::mxfp4_accumulate_tokens_portable(packed, scales, xs, x_stride, totals),
        }
    }

    /// `mxfp4_rows_tokens4` on this body: adds every group of `totals.len() / 4` MXFP4 rows
    /// (row `r`'s `row_groups` groups at `packed[16 * r * row_groups..]` and
    /// `scales[r * row_groups..]`) to the running totals of four tokens (`totals` is
    /// `[rows][4]`), token `k`'s activations at `xs[k * x_stride..]`. Each (row, token)
    /// total is the one [`DetectedIsa::mxfp4_accumulate_tokens`] reaches; the AVX-512 body
    /// decodes each group once for the four tokens held in registers, the others run
    /// `mxfp4_accumulate_tokens` row by row. Panics unless the lengths fit.
    pub fn mxfp4_rows_tokens4(
        self,
        packed: &[u8],
        scales: &[u8],
        row_groups: usize,
        xs: &[f64],
        x_stride: usize,
        totals: &mut [f64],
    ) {
        let rows = totals.len() / 4;
        assert!(totals.len() == 4 * rows && scales.len() == rows * row_groups, "mxfp4_rows_tokens4 sizes");
        assert!(packed.len() == 16 * scales.len(), "mxfp4_rows_tokens4 packed length");
        assert!(rows == 0 || 3 * x_stride + 32 * row_groups <= xs.len(), "mxfp4_rows_tokens4 activations");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe {
                mxfp4_avx512::mxfp4_rows_tokens4(packed, scales, row_groups, xs, x_stride, totals)
            },
            _ => {
                for (r, row_totals) in totals.chunks_exact_mut(4).enumerate() {
                    let (p, s) =
                        (&packed[16 * r * row_groups..][..16 * row_groups], &scales[r * row_groups..][..row_groups]);
                    self.mxfp4_accumulate_tokens(p, s, xs, x_stride, row_totals);
                }
            }
        }
    }

    /// `dot_mxfp4_batch` on this body: one MXFP4 row against several tokens (`xs` is
    /// `[out.len()][cols]`), each token's result bit-identical to
    /// [`DetectedIsa::dot_mxfp4`]: the whole-row form of
    /// [`DetectedIsa::mxfp4_accumulate_tokens`], which the twin tests drive on every body.
    pub fn dot_mxfp4_batch(self, packed: &[u8], scales: &[u8], xs: &[f64], out: &mut [f32]) {
        let cols = packed.len() * 2;
        assert!(scales.len() * 32 == cols && xs.len() == out.len() * cols, "dot_mxfp4_batch lengths");
        let mut totals = vec![0.0f64; out.len()];
        self.mxfp4_accumulate_tokens(packed, scales, xs, cols, &mut totals);
        for (o, t) in out.iter_mut().zip(totals) {
            *o = t as f32;
        }
    }

    /// `bf16_rows2_tokens4` on this body: [`DetectedIsa::bf16_accumulate_tokens`] for two
    /// row spans of the same length and four tokens, the AVX-512 body sharing each token's
    /// activation loads between the rows (the others take the rows one at a time); each
    /// (row, token)'s lanes are the same bits either way. Panics unless the spans have the
    /// same length, a multiple of 16, each `lanes` holds four tokens and the last token's
    /// span lies within `xs`.
    pub fn bf16_rows2_tokens4(self, w: [&[u16]; 2], xs: &[f64], x_stride: usize, lanes: [&mut [[f64; 16]]; 2]) {
        assert!(w[0].len() == w[1].len() && w[0].len().is_multiple_of(16), "bf16_rows2_tokens4 spans");
        assert!(lanes[0].len() == 4 && lanes[1].len() == 4, "bf16_rows2_tokens4 tokens");
        assert!(3 * x_stride + w[0].len() <= xs.len(), "bf16_rows2_tokens4 activations");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe { simd_x86::bf16_rows2_tokens4(w, xs, x_stride, lanes) },
            _ => {
                let [first, second] = lanes;
                self.bf16_accumulate_tokens(w[0], xs, x_stride, first);
                self.bf16_accumulate_tokens(w[1], xs, x_stride, second);
            }
        }
    }

    /// `bf16_accumulate_tokens` on this body: adds the 16-element blocks of one BF16 row
    /// span `w` to the 16 contract lanes of `lanes.len()` tokens, token `k`'s activations
    /// for the span starting at `xs[k * x_stride]`; a row summed span after span in column
    /// order, then reduced and given its tail, is exactly [`DetectedIsa::dot_bf16`]. Panics
    /// unless `w.len()` is a multiple of 16 and the last token's span lies within `xs`.
    pub fn bf16_accumulate_tokens(self, w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
        let n = lanes.len();
        assert!(w.len().is_multiple_of(16), "bf16_accumulate_tokens span length");
        assert!(n == 0 || (n - 1) * x_stride + w.len() <= xs.len(), "bf16_accumulate_tokens activations");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant); lengths checked above.
            Isa::Avx2 => unsafe { simd_avx2::bf16_accumulate_tokens(w, xs, x_stride, lanes) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe { simd_x86::bf16_accumulate_tokens(w, xs, x_stride, lanes) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { simd_neon::bf16_accumulate_tokens(w, xs, x_stride, lanes) },
            _ => dot::bf16_accumulate_tokens_portable(w, xs, x_stride, lanes),
        }
    }

    /// `dot_bf16_tokens` on this body: one BF16 row against several tokens (`xs` is
    /// `[out.len()][w.len()]`), each token's result bit-identical to
    /// [`DetectedIsa::dot_bf16`]: the whole-row form of
    /// [`DetectedIsa::bf16_accumulate_tokens`], which the twin tests drive on every body.
    pub fn dot_bf16_tokens(self, w: &[u16], xs: &[f64], out: &mut [f32]) {
        let cols = w.len();
        assert!(xs.len() == out.len() * cols, "dot_bf16_tokens lengths");
        let full = cols / 16 * 16;
        let mut lanes = vec![[0.0f64; 16]; out.len()];
        self.bf16_accumulate_tokens(&w[..full], xs, cols, &mut lanes);
        for (k, (o, l)) in out.iter_mut().zip(&lanes).enumerate() {
            *o = dot::finish_dense_bf16(l, &w[full..], &xs[k * cols + full..(k + 1) * cols]);
        }
    }

    /// `dot_f32_queries` on this body: every row of `rows` (`[n_rows][width]`) against
    /// every query of `queries` (`[n_q][width]`, widened to f64), each pair bit-identical
    /// to [`DetectedIsa::dot_f32`]; query `q`'s result for row `r` goes to
    /// `out[q * out_stride + r]`. Panics unless the lengths are whole rows and `out` holds
    /// every result.
    pub fn dot_f32_queries(self, rows: &[f32], width: usize, queries: &[f64], out: &mut [f32], out_stride: usize) {
        assert!(
            width > 0 && rows.len().is_multiple_of(width) && queries.len().is_multiple_of(width),
            "dot_f32_queries widths"
        );
        let (n_rows, n_q) = (rows.len() / width, queries.len() / width);
        assert!(n_rows <= out_stride || n_q <= 1, "dot_f32_queries stride");
        assert!(n_q == 0 || (n_q - 1) * out_stride + n_rows <= out.len(), "dot_f32_queries output");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe { simd_x86::dot_f32_queries(rows, width, queries, out, out_stride) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant); lengths checked above.
            Isa::Avx2 => unsafe { simd_avx2::dot_f32_queries(rows, width, queries, out, out_stride) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe { simd_neon::dot_f32_queries(rows, width, queries, out, out_stride) },
            _ => dot::dot_f32_queries_portable(rows, width, queries, out, out_stride),
        }
    }

    /// `accumulate_weighted_rows_f32` on this body: for every accumulator `q` of `acc`
    /// (`[n_q][width]`) and every row `r` of `rows` in order (`row_stride` floats apart, the
    /// first `width` used), `acc[q][j] += weights[q * w_stride + r] · rows[r][j]` as an f32
    /// product then an f32 sum. Panics unless the slices hold what that reads.
    pub fn accumulate_weighted_rows_f32(
        self,
        weights: &[f32],
        w_stride: usize,
        rows: &[f32],
        row_stride: usize,
        acc: &mut [f32],
        width: usize,
    ) {
        assert!(width > 0 && row_stride >= width && rows.len().is_multiple_of(row_stride), "weighted rows widths");
        assert!(acc.len().is_multiple_of(width), "weighted rows accumulators");
        let (n_rows, n_q) = (rows.len() / row_stride, acc.len() / width);
        assert!(n_q == 0 || (n_q - 1) * w_stride + n_rows <= weights.len(), "weighted rows weights");
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); lengths checked above.
            Isa::Avx512 => unsafe {
                simd_x86::accumulate_weighted_rows_f32(weights, w_stride, rows, row_stride, acc, width)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant); lengths checked above.
            Isa::Avx2 => unsafe {
                simd_avx2::accumulate_weighted_rows_f32(weights, w_stride, rows, row_stride, acc, width)
            },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant); lengths checked above.
            Isa::Neon => unsafe {
                simd_neon::accumulate_weighted_rows_f32(weights, w_stride, rows, row_stride, acc, width)
            },
            _ => dot::accumulate_weighted_rows_f32_portable(weights, w_stride, rows, row_stride, acc, width),
        }
    }

    /// The FMA-rate probe on this body: `rounds` rounds of twelve independent chains of
    /// f64 fused multiply-adds, as wide as the body's registers (4 lanes for AVX2, 8 for
    /// AVX-512, 2 for NEON, 1 portable); see [`fma_peak_flops_per_round`].
    fn fma_probe_f64(self, rounds: usize) -> f64 {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F (its
            // invariant).
            Isa::Avx512 => unsafe { simd_x86::fma_probe_f64(rounds) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant).
            Isa::Avx2 => unsafe { simd_avx2::fma_probe_f64(rounds) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant).
            Isa::Neon => unsafe { simd_neon::fma_probe_f64(rounds) },
            _ => dot::fma_probe_f64_portable(rounds),
        }
    }

    /// The memory-read probe on this body: the sum of `data` at full memory speed (its
    /// order is not part of the FP contract).
    fn read_sum(self, data: &[f32]) -> f32 {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx512` only when the CPU has AVX-512F/BW (its
            // invariant); the body needs AVX-512F.
            Isa::Avx512 => unsafe { simd_x86::read_sum(data) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `DetectedIsa` holds `Avx2` only when the CPU has AVX2 and FMA (its
            // invariant).
            Isa::Avx2 => unsafe { simd_avx2::read_sum(data) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: a `DetectedIsa` holds `Neon` only when the CPU has NEON (its
            // invariant).
            Isa::Neon => unsafe { simd_neon::read_sum(data) },
            _ => dot::read_sum_portable(data),
        }
    }
}

impl std::fmt::Display for DetectedIsa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.isa.fmt(f)
    }
}

/// Every body this CPU can run, portable first, fastest last.
pub fn available() -> Vec<DetectedIsa> {
    Isa::ALL.into_iter().filter(|&isa| cpu_runs(isa)).map(|isa| DetectedIsa { isa }).collect()
}

/// The fastest body this CPU runs, chosen once.
pub fn best() -> DetectedIsa {
    static BEST: OnceLock<DetectedIsa> = OnceLock::new();
    *BEST.get_or_init(|| available().last().copied().unwrap_or(DetectedIsa::portable()))
}

/// The body chosen with [`select`]: 0 = none (use [`best`]), else 1 + index in `Isa::ALL`.
/// Only [`select`] stores a code, and only from a `DetectedIsa`, so a code names a level
/// this CPU runs.
static SELECTED: AtomicU8 = AtomicU8::new(0);

/// The body the dispatched entry points run: [`best`] unless [`select`] chose another.
pub fn current() -> DetectedIsa {
    match SELECTED.load(Ordering::Relaxed) {
        0 => best(),
        // Rebuilding the proof is sound: the code came from a `DetectedIsa` (see `SELECTED`).
        code => DetectedIsa { isa: Isa::ALL[usize::from(code) - 1] },
    }
}

/// Makes the dispatched entry points (and so every `Matrix` product) run `body` from now
/// on, for every thread. Results do not change (the bodies are bit-identical), only speed.
pub fn select(body: DetectedIsa) {
    let code = Isa::ALL.iter().position(|&i| i == body.isa).map_or(0, |p| p as u8 + 1);
    SELECTED.store(code, Ordering::Relaxed);
}

/// `Σ w[i]·x[i]` for an f32 row on the [`current`] body (`x` widened to f64).
pub fn dot_f32(w: &[f32], x: &[f64]) -> f32 {
    current().dot_f32(w, x)
}

/// `Σ w[i]·x[i]` for a BF16 row (raw bits) on the [`current`] body (`x` widened to f64).
pub fn dot_bf16(w: &[u16], x: &[f64]) -> f32 {
    current().dot_bf16(w, x)
}

/// Four BF16 rows against one activation on the [`current`] body, each bit-identical to
/// [`dot_bf16`].
pub fn dot_bf16_rows4(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    current().dot_bf16_rows4(w, x)
}

/// `Σ w[i]·x[i]` for one packed MXFP4 row on the [`current`] body: `packed.len() ==
/// x.len() / 2`, `scales.len() == x.len() / 32`.
pub fn dot_mxfp4(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    current().dot_mxfp4(packed, scales, x)
}

/// [`DetectedIsa::mxfp4_accumulate_tokens`] on the [`current`] body.
pub fn mxfp4_accumulate_tokens(packed: &[u8], scales: &[u8], xs: &[f64], x_stride: usize, totals: &mut [f64]) {
    current().mxfp4_accumulate_tokens(packed, scales, xs, x_stride, totals)
}

/// [`DetectedIsa::dot_f32_queries`] on the [`current`] body.
pub fn dot_f32_queries(rows: &[f32], width: usize, queries: &[f64], out: &mut [f32], out_stride: usize) {
    current().dot_f32_queries(rows, width, queries, out, out_stride)
}

/// [`DetectedIsa::accumulate_weighted_rows_f32`] on the [`current`] body.
pub fn accumulate_weighted_rows_f32(
    weights: &[f32],
    w_stride: usize,
    rows: &[f32],
    row_stride: usize,
    acc: &mut [f32],
    width: usize,
) {
    current().accumulate_weighted_rows_f32(weights, w_stride, rows, row_stride, acc, width)
}

/// Sum of `data` at full memory speed (benchmark probe; order not part of the contract).
/// Always the fastest body ([`best`]), whatever [`select`] chose: it measures the memory
/// floor the kernels are compared against.
pub fn read_sum(data: &[f32]) -> f32 {
    best().read_sum(data)
}

/// [`DetectedIsa::bf16_accumulate_tokens`] on the [`current`] body.
pub fn bf16_accumulate_tokens(w: &[u16], xs: &[f64], x_stride: usize, lanes: &mut [[f64; 16]]) {
    current().bf16_accumulate_tokens(w, xs, x_stride, lanes)
}

/// Floating-point operations (a multiply-add counts two) in one round of
/// [`fma_probe_f64`] on `body`: twelve chains of one register's f64 lanes.
pub fn fma_peak_flops_per_round(body: DetectedIsa) -> f64 {
    let lanes = match body.isa {
        Isa::Avx512 => 8.0,
        Isa::Avx2 => 4.0,
        Isa::Neon => 2.0,
        Isa::Portable => 1.0,
    };
    12.0 * lanes * 2.0
}

/// The f64 FMA-rate probe on the fastest body ([`best`]), whatever [`select`] chose: the
/// compute ceiling the kernels are compared against (every product the FP contract makes
/// accumulates in f64). Returns a value that keeps the work alive.
pub fn fma_probe_f64(rounds: usize) -> f64 {
    best().fma_probe_f64(rounds)
}
