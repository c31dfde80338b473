//! `k3 bench kernels`: production kernels at K3 dimensions against the memory floor.

use k3_engine::bench::{kernel_suite, KernelResult};
use k3_engine::kernels::dispatch;
use k3_engine::{CancelToken, DecodeMode, EventSink, GenerateParams, Sampling, TokenEvent};
use k3_store::{best_over, floor_grid};
use serde_json::json;

use super::{input_error, load_engine, Failure};
use crate::args::{BenchKernelsArgs, BenchStreamArgs};

pub fn kernels(args: BenchKernelsArgs) -> Result<(), Failure> {
    if let Some(isa) = args.isa {
        // Detection refuses a body this CPU lacks, naming the ones it has.
        dispatch::select(dispatch::DetectedIsa::detect(isa)?);
    }
    let isa = dispatch::current().isa();
    let available: Vec<&str> = dispatch::available().iter().map(|body| body.isa().name()).collect();
    let all = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    if all == 0 || all > k3_engine::engine::MAX_THREADS {
        return Err(super::input_error(format!("--threads {all}: give 1 to {}", k3_engine::engine::MAX_THREADS)));
    }
    let mut runs = vec![kernel_suite(1, args.reps.max(1))?];
    if all > 1 {
        runs.push(kernel_suite(all, args.reps.max(1))?);
    }
    if args.json {
        let cases: Vec<_> = runs.iter().flat_map(|(mem, rs)| rs.iter().map(move |r| case_json(r, *mem))).collect();
        outln!("{}", json!({ "cpu": cpu_name(), "isa": isa.name(), "available_isas": available, "cases": cases }));
        return Ok(());
    }
    outln!("{}", cpu_name());
    outln!("kernel bodies: {isa} (this CPU runs: {})", available.join(", "));
    for (mem, results) in &runs {
        outln!("memory read bandwidth at {} thread(s): {mem:.1} GB/s", results[0].threads);
        for r in results {
            let batched =
                r.speedup_vs_one_token.map(|s| format!("  {s:.2}× one token's throughput")).unwrap_or_default();
            outln!(
                "  {:<28} {:>9.3} ms  {:>7.1} GFLOP/s  {:>6.1} GB/s weights  {:>5.2}× memory floor{batched}",
                r.name,
                r.median.as_secs_f64() * 1e3,
                r.gflops,
                r.weight_gbps,
                r.memory_ratio
            );
        }
    }
    Ok(())
}

fn case_json(r: &KernelResult, mem_gbps: f64) -> serde_json::Value {
    json!({
        "name": r.name, "threads": r.threads, "median_ms": r.median.as_secs_f64() * 1e3,
        "gflops": r.gflops, "weight_gbps": r.weight_gbps, "memory_read_gbps": mem_gbps,
        "ratio_to_memory_floor": r.memory_ratio, "per_token_speedup_vs_one_token": r.speedup_vs_one_token,
    })
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

/// Per-token figures of a decode step.
#[derive(Default)]
struct Steps {
    seconds: Vec<f64>,
    trunk_bytes: Vec<f64>,
    expert_bytes: Vec<f64>,
    io_wait: Vec<f64>,
}

impl EventSink for Steps {
    fn token(&mut self, e: &TokenEvent<'_>) {
        if e.index == 0 {
            return; // the prompt's prefill
        }
        self.seconds.push(e.elapsed.as_secs_f64());
        self.trunk_bytes.push(e.metrics.trunk_bytes_read as f64);
        self.expert_bytes.push(e.metrics.expert_bytes_read as f64);
        self.io_wait.push(e.metrics.io_wait().as_secs_f64());
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

pub fn stream(args: BenchStreamArgs) -> Result<(), Failure> {
    if args.model.memory.preset.is_none() && args.model.memory.cache_budget.is_none() {
        return Err(input_error("bench stream needs a budget: --preset P or --trunk-budget/--cache-budget".into()));
    }
    // A 4-token prompt, then the measured steps, within the context the plan reserves.
    let context = args.model.memory.context_length;
    if args.tokens == 0 || args.tokens.saturating_add(5) > context {
        return Err(input_error(format!(
            "--tokens {}: use 1 to {} (the context length less the prompt)",
            args.tokens,
            context.saturating_sub(5)
        )));
    }
    // The floor is the drive's best, never the engine's own read pattern: the fastest
    // point measured on the same files just before and just after the engine runs (a
    // virtual disk's bandwidth moves with bursts and host caching; the best figure the
    // machine shows is the floor).
    let groups = [
        super::disk::shards(&args.model.model)?,
        args.model.memory.trunk.iter().map(|t| t.join("trunk.bin")).collect(),
    ];
    let (before, direct_before) = best_over(&groups, &floor_grid())?;
    let engine = load_engine(&args.model)?;
    let plan = engine.plan().cloned();
    let pattern = engine.memory_options().read_pattern;
    let params = GenerateParams {
        max_new_tokens: args.tokens + 1,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let mut steps = Steps::default();
    let prompt: Vec<u32> = (1..=4).map(|i| i % engine.config().vocab_size as u32).collect();
    engine.generate(&mut engine.new_session(), &prompt, &params, &CancelToken::new(), &mut steps)?;
    drop(engine);
    let (after, direct_after) = best_over(&groups, &floor_grid())?;
    let direct = direct_before && direct_after;
    let best = [before, after].into_iter().flatten().max_by(|a, b| a.gbps.total_cmp(&b.gbps));
    let best_gbps = best.map_or(0.0, |b| b.gbps);
    let s_per_token = mean(&steps.seconds);
    let (trunk_bytes, expert_bytes) = (mean(&steps.trunk_bytes), mean(&steps.expert_bytes));
    let bytes = trunk_bytes + expert_bytes;
    let io_floor = if best_gbps > 0.0 { bytes / (best_gbps * 1e9) } else { 0.0 };
    let achieved_gbps = if s_per_token > 0.0 { bytes / s_per_token / 1e9 } else { 0.0 };
    let compute = (s_per_token - mean(&steps.io_wait)).max(0.0);
    let floor = io_floor.max(compute);
    let v = json!({
        "tokens": steps.seconds.len(),
        "seconds_per_token": s_per_token,
        "trunk_bytes_per_token": trunk_bytes,
        "expert_bytes_per_token": expert_bytes,
        "io_wait_seconds_per_token": mean(&steps.io_wait),
        "compute_seconds_per_token": compute,
        "drive_best_gbps": best_gbps,
        "drive_best_request_bytes": best.map(|b| b.request_bytes),
        "drive_best_depth": best.map(|b| b.depth),
        "drive_best_access": best.map(|b| b.access),
        "drive_best_before_gbps": before.map(|b| b.gbps),
        "drive_best_after_gbps": after.map(|b| b.gbps),
        "drive_direct": direct,
        "achieved_read_gbps": achieved_gbps,
        "achieved_over_drive_best": if best_gbps > 0.0 { achieved_gbps / best_gbps } else { 0.0 },
        "read_request_bytes": pattern.request_bytes,
        "read_depth": pattern.depth,
        "io_floor_seconds": io_floor,
        "compute_floor_seconds": compute,
        "ratio_to_larger_floor": if floor > 0.0 { s_per_token / floor } else { 0.0 },
        "pinned_layers": plan.as_ref().map(|p| p.pinned_layers),
        "cache_slots": plan.as_ref().map(|p| p.cache_slots),
    });
    if args.json {
        outln!("{v}");
    } else {
        outln!(
            "{:.2} s/token over {} tokens · read {:.2} GB/token (trunk {:.2}, experts {:.2}) · I/O wait {:.2} s, compute {:.2} s",
            s_per_token, steps.seconds.len(), bytes / 1e9, trunk_bytes / 1e9, expert_bytes / 1e9,
            mean(&steps.io_wait), compute
        );
        outln!(
            "reading at {achieved_gbps:.2} of {best_gbps:.2} GB/s (the drive's best: {} MiB × {} in flight; the engine reads {} MiB × {}) → I/O floor {io_floor:.2} s; compute floor {compute:.2} s; measured / larger floor = {:.2}",
            best.map_or(0, |b| b.request_bytes >> 20), best.map_or(0, |b| b.depth),
            pattern.request_bytes >> 20, pattern.depth,
            v["ratio_to_larger_floor"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}
