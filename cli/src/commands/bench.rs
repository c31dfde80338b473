//! `k3 bench kernels`: production kernels at K3 dimensions against the memory floor and
//! the f64 FMA peak, both measured in the same run: a table, or `--json` derived from the
//! typed [`KernelsReport`].

use k3_engine::advanced::bench::{kernel_suite, KernelResult, Limits};
use k3_engine::advanced::kernels::dispatch;
use serde::Serialize;

use super::Failure;
use crate::args::BenchKernelsArgs;
use crate::out::Json;

/// `k3 bench kernels --json`: the CPU, its kernel bodies and every case at each thread count.
#[derive(Serialize)]
struct KernelsReport<'a> {
    cpu: String,
    isa: &'a str,
    available_isas: Vec<&'a str>,
    cases: Vec<KernelCase<'a>>,
}

/// One kernel case at one thread count, against that thread count's limits.
#[derive(Serialize)]
struct KernelCase<'a> {
    name: &'a str,
    threads: usize,
    median_ms: f64,
    gflops: f64,
    weight_gbps: f64,
    memory_read_gbps: f64,
    fma_peak_gflops: f64,
    ratio_to_fma_peak: f64,
    ratio_to_memory_floor: f64,
    per_token_speedup_vs_one_token: Option<f64>,
}

pub fn kernels(args: BenchKernelsArgs) -> Result<(), Failure> {
    if let Some(isa) = args.isa {
        // Detection refuses a body this CPU lacks, naming the ones it has.
        dispatch::select(dispatch::DetectedIsa::detect(isa)?);
    }
    let isa = dispatch::current().isa();
    let available: Vec<&str> = dispatch::available().iter().map(|body| body.isa().name()).collect();
    let all = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    if all == 0 || all > k3_engine::MAX_THREADS {
        return Err(super::input_error(format!("--threads {all}: give 1 to {}", k3_engine::MAX_THREADS)));
    }
    let mut runs = vec![kernel_suite(1, args.reps.max(1))?];
    if all > 1 {
        runs.push(kernel_suite(all, args.reps.max(1))?);
    }
    if args.json {
        let cases = runs.iter().flat_map(|(limits, rs)| rs.iter().map(move |r| KernelCase::of(r, limits))).collect();
        outln!("{}", Json(&KernelsReport { cpu: cpu_name(), isa: isa.name(), available_isas: available, cases }));
        return Ok(());
    }
    outln!("{}", cpu_name());
    outln!("kernel bodies: {isa} (this CPU runs: {})", available.join(", "));
    for (limits, results) in &runs {
        let threads = results[0].threads;
        outln!("memory read bandwidth at {threads} thread(s): {:.1} GB/s", limits.memory_gbps);
        outln!(
            "f64 FMA peak at {threads} thread(s): {:.1} GFLOP/s (every product of the FP contract accumulates in f64)",
            limits.fma_peak_gflops
        );
        for r in results {
            let batched =
                r.speedup_vs_one_token.map(|s| format!("  {s:.2}× one token's throughput")).unwrap_or_default();
            outln!(
                "  {:<28} {:>9.3} ms  {:>7.1} GFLOP/s {:>4.0}% of FMA peak  {:>6.1} GB/s weights  {:>5.2}× memory floor{batched}",
                r.name,
                r.median.as_secs_f64() * 1e3,
                r.gflops,
                r.peak_ratio * 100.0,
                r.weight_gbps,
                r.memory_ratio
            );
        }
    }
    Ok(())
}

impl<'a> KernelCase<'a> {
    fn of(r: &'a KernelResult, limits: &Limits) -> Self {
        KernelCase {
            name: &r.name,
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

pub(super) fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}
