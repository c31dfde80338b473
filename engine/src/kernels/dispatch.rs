//! Picks the kernel bodies once per process from what the CPU supports.
//!
//! Owns: [`Isa`], the choice (`best`), and the `_wide` entry points the matrix code calls.
//! Must not: change results: every body is bit-identical to the portable one (the twin
//! tests run each available body against the reference on this host).

use std::sync::OnceLock;

use crate::kernels::dot;

/// An instruction-set level with its own kernel bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Portable,
    /// x86-64 AVX-512 F + BW.
    Avx512,
}

/// Every body this CPU can run, portable first.
pub fn available() -> Vec<Isa> {
    let mut isas = vec![Isa::Portable];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
        isas.push(Isa::Avx512);
    }
    isas
}

/// The fastest body this CPU runs, chosen once.
pub fn best() -> Isa {
    static BEST: OnceLock<Isa> = OnceLock::new();
    *BEST.get_or_init(|| *available().last().unwrap_or(&Isa::Portable))
}

/// `dot_f32` on a given body; `isa` must be in [`available`].
pub fn dot_f32_on(isa: Isa, w: &[f32], x: &[f64]) -> f32 {
    assert_eq!(w.len(), x.len(), "dot_f32 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only in `available()` when the CPU has AVX-512F/BW; lengths checked.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_f32_avx512(w, x) },
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
        _ => dot::dot_bf16_portable(w, x),
    }
}

/// `dot_mxfp4` on a given body; `isa` must be in [`available`].
pub fn dot_mxfp4_on(isa: Isa, packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    assert!(packed.len() * 2 == x.len() && scales.len() * 32 == x.len(), "dot_mxfp4 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `dot_f32_on`; the MXFP4 length relations are checked above.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_mxfp4_avx512(packed, scales, x) },
        _ => dot::dot_mxfp4_portable(packed, scales, x),
    }
}

pub fn dot_f32_wide(w: &[f32], x: &[f64]) -> f32 {
    dot_f32_on(best(), w, x)
}

pub fn dot_bf16_wide(w: &[u16], x: &[f64]) -> f32 {
    dot_bf16_on(best(), w, x)
}

pub fn dot_mxfp4_wide(packed: &[u8], scales: &[u8], x: &[f64]) -> f32 {
    dot_mxfp4_on(best(), packed, scales, x)
}

/// One MXFP4 row against several tokens (`xs` is `[out.len()][cols]`), each token's
/// result bit-identical to `dot_mxfp4_on`; the nibbles are decoded once per group.
pub fn dot_mxfp4_batch_on(isa: Isa, packed: &[u8], scales: &[u8], xs: &[f64], out: &mut [f32]) {
    let cols = packed.len() * 2;
    assert!(scales.len() * 32 == cols && xs.len() == out.len() * cols, "dot_mxfp4_batch lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only available when the CPU has AVX-512F/BW; lengths checked.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_mxfp4_batch_avx512(packed, scales, xs, out) },
        _ => {
            for (o, x) in out.iter_mut().zip(xs.chunks_exact(cols)) {
                *o = dot::dot_mxfp4_portable(packed, scales, x);
            }
        }
    }
}

pub fn dot_mxfp4_batch_wide(packed: &[u8], scales: &[u8], xs: &[f64], out: &mut [f32]) {
    dot_mxfp4_batch_on(best(), packed, scales, xs, out)
}

/// Four BF16 rows against one activation, each bit-identical to `dot_bf16_on`.
pub fn dot_bf16_rows4_on(isa: Isa, w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    assert!(w.iter().all(|r| r.len() == x.len()), "dot_bf16_rows4 lengths");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only available when the CPU has AVX-512F/BW; lengths checked.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::dot_bf16_rows4_avx512(w, x) },
        _ => w.map(|row| dot::dot_bf16_portable(row, x)),
    }
}

pub fn dot_bf16_rows4_wide(w: [&[u16]; 4], x: &[f64]) -> [f32; 4] {
    dot_bf16_rows4_on(best(), w, x)
}

/// Sum of `data` at full memory speed (benchmark probe; order not part of the contract).
pub fn read_sum(data: &[f32]) -> f32 {
    match best() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only chosen when the CPU has AVX-512F.
        Isa::Avx512 => unsafe { crate::kernels::simd_x86::read_sum_avx512(data) },
        _ => data.chunks(64).map(|c| c.iter().sum::<f32>()).sum(),
    }
}
