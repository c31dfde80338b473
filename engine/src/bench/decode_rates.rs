//! This CPU's decode throughput for the speed forecast (`k3 forecast`): bytes of weights
//! per second through the two kernels a decoded token spends its compute in, measured in
//! a short run at the forecast's thread count.
//!
//! Owns: [`measure_decode_rates`]: a BF16 `[12288, 7168]` matrix × one vector (a KDA
//! projection; 176 MB, larger than any CPU cache, as trunk layers are) and one-token
//! MXFP4 experts at K3's size (gate, up, down), four of them taken in turn (70 MB, so an
//! expert is not timed warm from the cache, as no routed expert is), each timed for half
//! the budget after a warm-up; the median run gives bytes per second.
//! Must not: time anything but the production paths (`Matrix::matvec`, `GluMlp::forward`),
//! or read the clock for longer than the budget asks (the weights' setup comes on top: a
//! fraction of a second).
//! Easy to break: the weights must be realistic numbers (no NaN or infinities), so their
//! bits are random only in sign and mantissa.

use std::time::{Duration, Instant};

use k3_plan::ComputeRates;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{bench_config, blob_of};
use crate::events::CancelToken;
use crate::model::matrix::{Matrix, MatrixData};
use crate::model::mlp::GluMlp;

/// K3's KDA projection: `[12288, 7168]` BF16.
const BF16_SHAPE: (usize, usize) = (12288, 7168);
/// K3's routed expert: latent 3584, intermediate 3072.
const EXPERT_SHAPE: (usize, usize) = (3584, 3072);
/// Experts taken in turn, so each run reads one not in the CPU's cache.
const EXPERTS: usize = 4;

/// What [`measure_decode_rates`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeRates {
    pub threads: usize,
    pub rates: ComputeRates,
    /// Wall-clock seconds of the whole measurement, setup included.
    pub seconds: f64,
}

/// Random BF16 values of magnitude 2^-7 .. 2^-6, random sign.
fn quick_bf16(rows: usize, cols: usize, rng: &mut ChaCha8Rng) -> Matrix {
    let mut bytes = vec![0u8; rows * cols * 2];
    rng.fill_bytes(&mut bytes);
    for pair in bytes.chunks_exact_mut(2) {
        let bits = (u16::from_le_bytes([pair[0], pair[1]]) & 0x807f) | 0x3c00;
        pair.copy_from_slice(&bits.to_le_bytes());
    }
    Matrix::new(rows, cols, MatrixData::Bf16(blob_of(bytes)))
}

/// Random nibbles with scale bytes 118..=122, as the released experts have.
fn quick_mxfp4(rows: usize, cols: usize, rng: &mut ChaCha8Rng) -> Matrix {
    let mut packed = vec![0u8; rows * cols / 2];
    rng.fill_bytes(&mut packed);
    let scales: Vec<u8> = (0..rows * cols / 32).map(|_| 118 + rng.random_range(0..5u8)).collect();
    Matrix::new(rows, cols, MatrixData::Mxfp4 { packed: blob_of(packed), scales: blob_of(scales) })
}

fn expert(rng: &mut ChaCha8Rng) -> GluMlp {
    let (latent, inter) = EXPERT_SHAPE;
    GluMlp {
        gate: quick_mxfp4(inter, latent, rng).into(),
        up: quick_mxfp4(inter, latent, rng).into(),
        down: quick_mxfp4(latent, inter, rng).into(),
    }
}

/// Median of the runs of `f(i)` (i = 0, 1, …) that fit in `budget`, after one warm-up;
/// at least three runs.
fn median_within(budget: Duration, mut f: impl FnMut(usize)) -> Duration {
    f(0);
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 3 || start.elapsed() < budget {
        let t = Instant::now();
        f(times.len() + 1);
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

fn per_second(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64().max(1e-9)
}

/// The BF16 matvec and one-token MXFP4 expert throughputs on `threads` threads, each
/// timed for half of `budget`.
pub fn measure_decode_rates(threads: usize, budget: Duration) -> crate::Result<DecodeRates> {
    let start = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| crate::Error::Option { option: "threads", reason: e.to_string() })?;
    let cfg = bench_config()?;
    let mut rng = ChaCha8Rng::seed_from_u64(0x6b33_f0ca);
    let (rows, cols) = BF16_SHAPE;
    let matrix = quick_bf16(rows, cols, &mut rng);
    let experts: Vec<GluMlp> = (0..EXPERTS).map(|_| expert(&mut rng)).collect();
    let half = budget / 2;

    let x: Vec<f32> = (0..cols).map(|i| ((i % 97) as f32 - 48.0) / 48.0).collect();
    let mut y = vec![0.0f32; rows];
    let t_bf16 = median_within(half, |_| pool.install(|| matrix.matvec(&x, &mut y)));

    let latent = EXPERT_SHAPE.0;
    let xs: Vec<f32> = (0..latent).map(|i| ((i % 89) as f32 - 44.0) / 44.0).collect();
    let mut ys = vec![0.0f32; latent];
    let stop = CancelToken::new();
    let mut expert_failure = None;
    let t_expert = median_within(half, |i| {
        if let Err(e) = pool.install(|| experts[i % EXPERTS].forward(&cfg, &xs, &mut ys, &stop)) {
            expert_failure.get_or_insert(e);
        }
    });
    if let Some(e) = expert_failure {
        return Err(e);
    }
    std::hint::black_box((&y, &ys));

    let e = &experts[0];
    let expert_bytes = [&e.gate, &e.up, &e.down].iter().filter_map(|w| w.held()).map(Matrix::nbytes).sum();
    Ok(DecodeRates {
        threads,
        rates: ComputeRates {
            bf16_bytes_per_second: per_second(matrix.nbytes(), t_bf16),
            expert_bytes_per_second: per_second(expert_bytes, t_expert),
        },
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rates_are_positive_and_the_measurement_short() {
        let r = measure_decode_rates(1, Duration::from_millis(200)).unwrap();
        let rates = [r.rates.bf16_bytes_per_second, r.rates.expert_bytes_per_second];
        assert!(rates.iter().all(|v| v.is_finite() && *v > 0.0), "{r:?}");
        // The floors and the 10 s bound are native promises (natively the whole measurement
        // takes well under a second). Under an emulator (the aarch64 tests run in qemu,
        // K3_EMULATED set by .cargo/config.toml's runner) the figures are the emulator's
        // speed: here 9.5-12.3 s and 1.37-1.40e8 B/s BF16, on CI's machine 14.7 s and
        // 8.1e7 B/s, below the native floor, so only their sign is checked there.
        if std::env::var_os("K3_EMULATED").is_none() {
            assert!(r.rates.bf16_bytes_per_second > 1e8, "{r:?}");
            assert!(r.rates.expert_bytes_per_second > 1e7, "{r:?}");
            assert!(r.seconds < 10.0, "{r:?}");
        }
    }

    #[test]
    fn quick_weights_are_finite() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let m = quick_bf16(4, 64, &mut rng);
        let mut row = vec![0.0f32; 64];
        for r in 0..4 {
            m.row_f32(r, &mut row);
            assert!(row.iter().all(|v| v.is_finite() && v.abs() >= 2f32.powi(-7) && v.abs() < 2f32.powi(-6)));
        }
    }
}
