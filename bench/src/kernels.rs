//! `k3 bench kernels`: the production kernels at K3 dimensions against the memory floor and
//! the f64 FMA peak measured in the same run ([`KernelsReport`], from the engine's kernel
//! suite: each thread count's [`Limits`] and [`KernelResult`]s).

use k3_engine::advanced::bench::{KernelResult, Limits};
use serde::Serialize;

/// `k3 bench kernels --json`: the CPU, its kernel bodies and every case at each thread count.
#[derive(Serialize)]
pub struct KernelsReport {
    pub cpu: String,
    pub isa: String,
    pub available_isas: Vec<String>,
    pub cases: Vec<KernelCase>,
}

/// One kernel case at one thread count, against that thread count's limits.
#[derive(Serialize)]
pub struct KernelCase {
    pub name: String,
    pub threads: usize,
    pub median_ms: f64,
    pub gflops: f64,
    pub weight_gbps: f64,
    pub memory_read_gbps: f64,
    pub fma_peak_gflops: f64,
    pub ratio_to_fma_peak: f64,
    pub ratio_to_memory_floor: f64,
    pub per_token_speedup_vs_one_token: Option<f64>,
}

impl KernelsReport {
    /// The report of the suite's `runs` (one per thread count) on `cpu`.
    pub fn of(cpu: String, isa: &str, available_isas: &[&str], runs: &[(Limits, Vec<KernelResult>)]) -> Self {
        let cases = runs.iter().flat_map(|(limits, rs)| rs.iter().map(move |r| KernelCase::of(r, limits))).collect();
        KernelsReport {
            cpu,
            isa: isa.to_string(),
            available_isas: available_isas.iter().map(|s| s.to_string()).collect(),
            cases,
        }
    }
}

impl KernelCase {
    fn of(r: &KernelResult, limits: &Limits) -> Self {
        KernelCase {
            name: r.name.clone(),
            threads: r.threads,
            median_ms: r.median.as_secs_f64() * 1e3,
            gflops: r.gflops,
            weight_gbps: r.weight_gbps,
            memory_read_gbps: limits.memory_gbps,
            fma_peak_gflops: limits.fma_peak_gflops,
            ratio_to_fma_peak: r.peak_ratio,
            ratio_to_memory_floor: r.memory_ratio,
            per_token_speedup_vs_one_token: r.speedup_vs_one_token,
        }
    }
}
