//! `k3 bench kernels`: production kernels at K3 dimensions against the memory floor and
//! the f64 FMA peak, both measured in the same run: a table, or `--json` derived from
//! k3-bench's typed [`KernelsReport`].

use k3_bench::kernels::KernelsReport;
use k3_engine::advanced::bench::kernel_suite;
use k3_engine::advanced::kernels::dispatch;

use super::Failure;
use crate::args::BenchKernelsArgs;
use crate::out::Json;

pub fn kernels(args: BenchKernelsArgs) -> Result<(), Failure> {
    if let Some(isa) = args.isa {
        // Detection refuses a body this CPU lacks, naming the ones it has.
        dispatch::select(dispatch::DetectedIsa::detect(isa).map_err(k3_engine::Error::from)?);
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
        outln!("{}", Json(&KernelsReport::of(cpu_name(), isa.name(), &available, &runs)));
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
