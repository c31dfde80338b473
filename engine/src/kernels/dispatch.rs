//! Picks the kernel bodies once per process from what the CPU supports.
//!
//! Owns: [`Isa`], the choice (`best`, `current`, `select`), and the `_wide` entry points
//! the matrix code calls.
//! Must not: change results: every body is bit-identical to the portable one (the twin
//! tests run each available body against the reference on this host), which is also why
//! `select` may switch bodies at any time (benchmarks use it to time each body).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use crate::kernels::dot;

/// An instruction-set level with its own kernel bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Portable,
    /// x86-64 AVX2 + FMA (256-bit registers).
    Avx2,
    /// x86-64 AVX-512 F + BW.
    Avx512,
}

impl Isa {
    /// Every level, slowest first.
    pub const ALL: [Isa; 3] = [Isa::Portable, Isa::Avx2, Isa::Avx512];

    /// The lowercase name `k3 bench kernels --isa` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
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

/// Every body this CPU can run, portable first, fastest last.
pub fn available() -> Vec<Isa> {
    let mut isas = vec![Isa::Portable];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            isas.push(Isa::Avx2);
        }
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
            isas.push(Isa::Avx512);
        }
    }
    isas
}

/// The fastest body this CPU runs, chosen once.
pub fn best() -> Isa {
    static BEST: OnceLock<Isa> = OnceLock::new();
    *BEST.get_or_init(|| *available().last().unwrap_or(&Isa::Portable))
}

/// The body chosen with [`select`]: 0 = none (use [`best`]), else 1 + index in `Isa::ALL`.
static SELECTED: AtomicU8 = AtomicU8::new(0);

/// The body the `_wide` entry points run: [`best`] unless [`select`] chose another.
pub fn current() -> Isa {
    match SELECTED.load(Ordering::Relaxed) {
        0 => best(),
        code => Isa::ALL[usize::from(code) - 1],
    }
}

/// Makes the `_wide` entry points (and so every `Matrix` product) run `isa` from now on,
/// for every thread. Results do not change (the bodies are bit-identical), only speed.
pub fn select(isa: Isa) -> crate::Result<()> {
    let available = available();
    if !available.contains(&isa) {
        let names: Vec<&str> = available.iter().map(|i| i.name()).collect();
        return Err(crate::Error::Option {
            option: "isa",
            reason: format!("this CPU cannot run the {isa} kernels (available: {})", names.join(", ")),
        });
    }
    let code = Isa::ALL.iter().position(|&i| i == isa).map_or(0, |p| p as u8 + 1);
    SELECTED.store(code, Ordering::Relaxed);
    Ok(())
}

/// `dot_f32` on a given body; `isa` must be in [`available`].
pub fn dot_f32_on(isa: Isa, w: &[f32], x: &[f64]) -> f32 {
    assert_eq!(w.len(), x.len(), "dot_f32 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only in `available()` when the CPU has AVX-512F/BW; lengths checked.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_f32_avx512(w, x) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` is only in `available()` when the CPU has AVX2 and FMA; lengths checked.
        Isa::Avx2 => unsafe { crate::kernels::simd_avx2::dot_f32_avx2(w, x) },
        _ => dot::dot_f32_portable(w, x),
    }
}

/// `dot_bf16` on a given body; `isa` must be in [`available`].
pub fn dot_bf16_on(isa: Isa, w: &[u16], x: &[f64]) -> f32 {
    assert_eq!(w.len(), x.len(), "dot_bf16 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `dot_f32_on`.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_bf16_avx512(w, x) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `dot_f32_on`.
        Isa::Avx2 => unsafe { crate::kernels::simd_avx2::dot_bf16_avx2(w, x) },
        _ => dot::dot_bf16_portable(w, x),
    }
}

/// `dot_mxfp4` on a given body; `isa` must be in [`available`].
pub fn dot_mxfp4_on(isa: Isa, packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    assert!(packed.len() * 2 == x.len() && scales.len() * 32 == x.len(), "dot_mxfp4 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `dot_f32_on`; the MXFP4 length relations are checked above.
        Isa::Avx512 => unsafe { crate::kernels::mxfp4_avx512::dot_mxfp4_avx512(packed, scales, x) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `dot_f32_on`; the MXFP4 length relations are checked above.
        Isa::Avx2 => unsafe { crate::kernels::simd_avx2::dot_mxfp4_avx2(packed, scales, x) },
        _ => dot::dot_mxfp4_portable(packed, scales, x),
    }
}

pub fn dot_f32_wide(w: &[f32], x: &[f64]) -> f32 {
    dot_f32_on(current(), w, x)
}

pub fn dot_bf16_wide(w: &[u16], x: &[f64]) -> f32 {
    dot_bf16_on(current(), w, x)
}

pub fn dot_mxfp4_wide(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    dot_mxfp4_on(current(), packed, scales, x)
}

/// Adds groups `0..scales.len()` of one MXFP4 row to the running f64 totals of
/// `totals.len()` tokens, token `k`'s activations for those groups starting at
/// `xs[k * x_stride]`; each token's result is the one `dot_mxfp4_on` reaches when its
/// groups arrive in order, however the row is split into group ranges.
pub fn mxfp4_accumulate_tokens_on(
    isa: Isa,
    packed: &[u8],
    scales: &[u8],
    xs: &[f64],
    x_stride: usize,
    totals: &mut [f64],
) {
    let n = totals.len();
    assert!(packed.len() == 16 * scales.len(), "mxfp4_accumulate_tokens packed length");
    assert!(n == 0 || (n - 1) * x_stride + 32 * scales.len() <= xs.len(), "mxfp4_accumulate_tokens activations");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only available when the CPU has AVX-512F/BW; lengths checked.
        Isa::Avx512 => unsafe {
            crate::kernels::mxfp4_avx512::accumulate_tokens_avx512(packed, scales, xs, x_stride, totals)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` is only available when the CPU has AVX2 and FMA; lengths checked.
        Isa::Avx2 => unsafe { crate::kernels::simd_avx2::accumulate_tokens_avx2(packed, scales, xs, x_stride, totals) },
        _ => {
            for (k, total) in totals.iter_mut().enumerate() {
                dot::accumulate_mxfp4_portable(packed, scales, &xs[k * x_stride..], total);
            }
        }
    }
}

pub fn mxfp4_accumulate_tokens_wide(packed: &[u8], scales: &[u8], xs: &[f64], x_stride: usize, totals: &mut [f64]) {
    mxfp4_accumulate_tokens_on(current(), packed, scales, xs, x_stride, totals)
}

/// One MXFP4 row against several tokens (`xs` is `[out.len()][cols]`), each token's
/// result bit-identical to `dot_mxfp4_on`: the whole-row form of
/// [`mxfp4_accumulate_tokens_on`], which the twin tests drive on every body.
pub fn dot_mxfp4_batch_on(isa: Isa, packed: &[u8], scales: &[u8], xs: &[f64], out: &mut [f32]) {
    let cols = packed.len() * 2;
    assert!(scales.len() * 32 == cols && xs.len() == out.len() * cols, "dot_mxfp4_batch lengths");
    let mut totals = vec![0.0f64; out.len()];
    mxfp4_accumulate_tokens_on(isa, packed, scales, xs, cols, &mut totals);
    for (o, t) in out.iter_mut().zip(totals) {
        *o = t as f32;
    }
}

/// Four BF16 rows against one activation, each bit-identical to `dot_bf16_on`.
pub fn dot_bf16_rows4_on(isa: Isa, w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    assert!(w.iter().all(|r| r.len() == x.len()), "dot_bf16_rows4 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only available when the CPU has AVX-512F/BW; lengths checked.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_bf16_rows4_avx512(w, x) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` is only available when the CPU has AVX2 and FMA; lengths checked.
        Isa::Avx2 => unsafe { crate::kernels::simd_avx2::dot_bf16_rows4_avx2(w, x) },
        _ => w.map(|row| dot::dot_bf16_portable(row, x)),
    }
}

pub fn dot_bf16_rows4_wide(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    dot_bf16_rows4_on(current(), w, x)
}

/// Sum of `data` at full memory speed (benchmark probe; order not part of the contract).
/// Always the fastest body ([`best`]), whatever [`select`] chose: it measures the memory
/// floor the kernels are compared against.
pub fn read_sum(data: &[f32]) -> f32 {
    match best() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only chosen when the CPU has AVX-512F.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::read_sum_avx512(data) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` is only chosen when the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { crate::kernels::simd_avx2::read_sum_avx2(data) },
        _ => data.chunks(64).map(|c| c.iter().sum::<f32>()).sum(),
    }
}
