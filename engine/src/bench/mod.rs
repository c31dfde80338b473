//! Kernel benchmarks at the real K3 dimensions, with the machine's memory read bandwidth
//! and f64 FMA rate measured in the same run as the baselines (`k3 bench kernels`).
//!
//! Owns: building K3-sized weights in their checkpoint formats, timing the production
//! kernels (warm-up, repetitions, median) at a given thread count, a STREAM-style read
//! kernel for the memory floor, and an FMA-chain probe for the compute ceiling (f64: the
//! FP contract accumulates every product in f64, so no exact kernel can beat that rate).
//! Must not: time anything but the production code paths (`Matrix`, `GluMlp`).
//! [`decode_rates`] is the short form `k3 forecast` runs: the two throughputs a decode
//! step depends on, in under two seconds.

pub mod codec_rates;
pub mod decode_rates;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::config::ModelConfig;
use crate::io::{Blob, ByteView};
use crate::model::matrix::{Matrix, MatrixData};
use crate::model::mlp::GluMlp;

/// One measured case.
#[derive(Debug, Clone)]
pub struct KernelResult {
    pub name: String,
    pub threads: usize,
    pub median: Duration,
    /// Multiply-adds × 2 per second.
    pub gflops: f64,
    /// Weight bytes streamed per second.
    pub weight_gbps: f64,
    /// `weight_gbps / memory read bandwidth` (1.0 = at the memory floor).
    pub memory_ratio: f64,
    /// `gflops / the f64 FMA peak` at the same thread count (1.0 = at the compute ceiling).
    pub peak_ratio: f64,
    /// For a batched case: throughput per token over the same product's one-token case in
    /// the same run (`t(1) · n / t(n)`).
    pub speedup_vs_one_token: Option<f64>,
}

/// Median of `reps` timings after one warm-up run.
fn time_median(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

pub(crate) fn blob_of(bytes: Vec<u8>) -> ByteView {
    ByteView::whole(Arc::new(Blob::copy_of(&bytes)))
}

/// A `[rows, cols]` BF16 matrix of values ≈ N(0, 0.02).
pub fn random_bf16(rows: usize, cols: usize, seed: u64) -> Matrix {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let bytes: Vec<u8> = (0..rows * cols)
        .flat_map(|_| {
            let v: f32 = (rng.random::<f32>() - 0.5) * 0.07;
            ((v.to_bits() >> 16) as u16).to_le_bytes()
        })
        .collect();
    Matrix::new(rows, cols, MatrixData::Bf16(blob_of(bytes)))
}

/// A `[rows, cols]` MXFP4 matrix with random nibbles and realistic scale bytes (118..=122).
pub fn random_mxfp4(rows: usize, cols: usize, seed: u64) -> Matrix {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let packed: Vec<u8> = (0..rows * cols / 2).map(|_| rng.random()).collect();
    let scales: Vec<u8> = (0..rows * cols / 32).map(|_| 118 + rng.random_range(0..5u8)).collect();
    Matrix::new(rows, cols, MatrixData::Mxfp4 { packed: blob_of(packed), scales: blob_of(scales) })
}

/// Memory read bandwidth in GB/s with `threads` threads: sums a 1 GiB f32 array.
pub fn memory_read_gbps(pool: &rayon::ThreadPool) -> f64 {
    let data: Vec<f32> = vec![1.0; 256 << 20];
    let bytes = data.len() * 4;
    let mut sink = 0.0f32;
    let t = time_median(5, || {
        let s: f32 = pool.install(|| data.par_chunks(1 << 16).map(crate::kernels::dispatch::read_sum).sum());
        sink += s;
    });
    std::hint::black_box(sink);
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// The f64 fused multiply-add rate of `pool`'s threads in GFLOP/s (a multiply-add counts
/// two): every thread runs independent FMA chains on the fastest body, nothing else.
pub fn fma_peak_gflops(pool: &rayon::ThreadPool) -> f64 {
    use crate::kernels::dispatch::{best, fma_peak_flops_per_round, fma_probe_f64};
    const ROUNDS: usize = 20_000_000;
    let threads = pool.current_num_threads();
    let mut sink = 0.0f64;
    let t = time_median(5, || {
        sink += pool.install(|| (0..threads).into_par_iter().map(|_| fma_probe_f64(ROUNDS)).sum::<f64>());
    });
    std::hint::black_box(sink);
    threads as f64 * ROUNDS as f64 * fma_peak_flops_per_round(best()) / t.as_secs_f64() / 1e9
}

/// The machine's limits at one thread count, measured in the same run as the kernels.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Memory read bandwidth, GB/s.
    pub memory_gbps: f64,
    /// f64 FMA rate, GFLOP/s.
    pub fma_peak_gflops: f64,
}

fn result(name: &str, threads: usize, median: Duration, madds: f64, weight_bytes: f64, limits: Limits) -> KernelResult {
    let secs = median.as_secs_f64();
    let weight_gbps = weight_bytes / secs / 1e9;
    let gflops = 2.0 * madds / secs / 1e9;
    KernelResult {
        name: name.into(),
        threads,
        median,
        gflops,
        weight_gbps,
        memory_ratio: weight_gbps / limits.memory_gbps,
        peak_ratio: gflops / limits.fma_peak_gflops,
        speedup_vs_one_token: None,
    }
}

/// The kernel cases at the real K3 dimensions for one thread count, with the limits they
/// are compared against.
pub fn kernel_suite(threads: usize, reps: usize) -> crate::Result<(Limits, Vec<KernelResult>)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| crate::Error::Option { option: "threads", reason: e.to_string() })?;
    let limits = Limits { memory_gbps: memory_read_gbps(&pool), fma_peak_gflops: fma_peak_gflops(&pool) };
    let mut out = Vec::new();
    let (rows, cols) = (12288, 7168);
    let m = random_bf16(rows, cols, 1);
    let x: Vec<f32> = (0..cols).map(|i| ((i % 97) as f32 - 48.0) / 48.0).collect();
    let mut y = vec![0.0f32; rows];
    let t = time_median(reps, || pool.install(|| m.matvec(&x, &mut y)));
    out.push(result("bf16 matvec 12288x7168", threads, t, (rows * cols) as f64, (rows * cols * 2) as f64, limits));
    let run = (&pool, threads, reps, limits);
    // A BF16 projection (an attention or shared-expert matrix): the trunk's share of a
    // prefill chunk or a batch.
    out.extend(batched_cases(run, &random_bf16(4096, 7168, 5), "bf16 4096x7168"));
    // One MXFP4 expert matrix (a routed expert's gate or up): the batched MXFP4 kernel alone;
    // the expert cases add the other two matrices and the activation between them.
    out.extend(batched_cases(run, &random_mxfp4(3072, 3584, 6), "mxfp4 3072x3584"));
    out.extend(expert_cases(&pool, threads, reps, limits)?);
    Ok((limits, out))
}

/// One matrix against 1, 16 and 64 tokens, named `"{label} x{n} token(s)"`.
fn batched_cases(
    (pool, threads, reps, limits): (&rayon::ThreadPool, usize, usize, Limits),
    m: &Matrix,
    label: &str,
) -> Vec<KernelResult> {
    let (rows, cols) = (m.rows(), m.cols());
    let mut out = Vec::new();
    for n_tokens in BATCHES {
        let xs: Vec<f32> = (0..n_tokens * cols).map(|i| ((i % 89) as f32 - 44.0) / 44.0).collect();
        let mut ys = vec![0.0f32; n_tokens * rows];
        let t = time_median(reps, || pool.install(|| m.matmul(&xs, &mut ys)));
        let name = format!("{label} x{n_tokens} token{}", if n_tokens == 1 { "" } else { "s" });
        out.push(result(&name, threads, t, (rows * cols * n_tokens) as f64, m.nbytes() as f64, limits));
    }
    with_speedups(out)
}

/// One routed expert (gate, up, down in MXFP4) against 1, 16 and 64 tokens.
fn expert_cases(
    pool: &rayon::ThreadPool,
    threads: usize,
    reps: usize,
    limits: Limits,
) -> crate::Result<Vec<KernelResult>> {
    let (latent, inter) = (3584, 3072);
    let expert = GluMlp {
        gate: random_mxfp4(inter, latent, 2).into(),
        up: random_mxfp4(inter, latent, 3).into(),
        down: random_mxfp4(latent, inter, 4).into(),
    };
    let stop = crate::events::CancelToken::new();
    let cfg = bench_config()?;
    let expert_bytes = 3.0 * (inter * latent) as f64 * 0.53125;
    let madds = 3.0 * (inter * latent) as f64;
    let mut out = Vec::new();
    for n_tokens in BATCHES {
        let xs: Vec<f32> = (0..n_tokens * latent).map(|i| ((i % 89) as f32 - 44.0) / 44.0).collect();
        let mut ys = vec![0.0f32; n_tokens * latent];
        let mut failed = None;
        let t = time_median(reps, || {
            if let Err(e) = pool.install(|| expert.forward(&cfg, &xs, &mut ys, &stop)) {
                failed.get_or_insert(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        let name = if n_tokens == 1 { "mxfp4 expert".to_string() } else { format!("mxfp4 expert x{n_tokens} tokens") };
        out.push(result(&name, threads, t, madds * n_tokens as f64, expert_bytes, limits));
    }
    Ok(with_speedups(out))
}

/// Tokens per batched case: one token first, the baseline of the others.
const BATCHES: [usize; 3] = [1, 16, 64];

/// Each batched case's throughput per token over the one-token case's (`t(1) · n / t(n)`);
/// `cases` are measured at [`BATCHES`], in order.
fn with_speedups(mut cases: Vec<KernelResult>) -> Vec<KernelResult> {
    let Some(one) = cases.first().map(|c| c.median.as_secs_f64()) else { return cases };
    for (c, n) in cases.iter_mut().zip(BATCHES).skip(1) {
        c.speedup_vs_one_token = Some(one * n as f64 / c.median.as_secs_f64());
    }
    cases
}

/// Only the SiTU betas of the config matter to `GluMlp::forward`.
pub(crate) fn bench_config() -> crate::Result<ModelConfig> {
    let json = br#"{"hidden_size": 7168, "num_hidden_layers": 2, "vocab_size": 16, "rms_norm_eps": 1e-5,
        "kda_num_heads": 1, "kda_head_dim": 1, "short_conv_kernel_size": 4, "gate_lower_bound": -5.0,
        "num_attention_heads": 1, "q_lora_rank": 1, "kv_lora_rank": 1, "qk_nope_head_dim": 1,
        "qk_rope_head_dim": 1, "v_head_dim": 1, "num_experts": 16, "num_experts_per_token": 2,
        "num_shared_experts": 1, "routed_expert_hidden_size": 3584, "moe_intermediate_size": 3072,
        "routed_scaling_factor": 1.0, "first_k_dense_replace": 1, "intermediate_size": 1,
        "attn_res_block_size": 1, "situ_beta": 4.0, "situ_linear_beta": 25.0, "full_attn_layers": [2]}"#;
    Ok(ModelConfig::from_json(json, std::path::Path::new("bench"))?)
}
