//! `k3 bench kernels`: production kernels at K3 dimensions against the memory floor.

use k3_engine::bench::{direct_read_gbps, kernel_suite, KernelResult};
use k3_engine::kernels::dispatch;
use k3_engine::{CancelToken, DecodeMode, EventSink, GenerateParams, Sampling, TokenEvent};
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
    let mut runs = vec![kernel_suite(1, args.reps.max(1))?];
    if all > 1 {
        runs.push(kernel_suite(all, args.reps.max(1))?);
    }
    if args.json {
        let cases: Vec<_> = runs.iter().flat_map(|(mem, rs)| rs.iter().map(move |r| case_json(r, *mem))).collect();
        println!("{}", json!({ "cpu": cpu_name(), "isa": isa.name(), "available_isas": available, "cases": cases }));
        return Ok(());
    }
    println!("{}", cpu_name());
    println!("kernel bodies: {isa} (this CPU runs: {})", available.join(", "));
    for (mem, results) in &runs {
        println!("memory read bandwidth at {} thread(s): {mem:.1} GB/s", results[0].threads);
        for r in results {
            let batched =
                r.speedup_vs_one_token.map(|s| format!("  {s:.2}× one token's throughput")).unwrap_or_default();
            println!(
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

fn cpu_name() -> String {
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
        self.io_wait.push(e.metrics.io_wait.as_secs_f64());
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

pub fn stream(args: BenchStreamArgs) -> Result<(), Failure> {
    if args.model.memory.preset.is_none() && args.model.memory.cache_budget.is_none() {
        return Err(input_error("bench stream needs a budget: --preset P or --trunk-budget/--cache-budget".into()));
    }
    let engine = load_engine(&args.model)?;
    let plan = engine.plan().cloned();
    let params = GenerateParams {
        max_new_tokens: args.tokens.max(1) + 1,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let mut steps = Steps::default();
    let prompt: Vec<u32> = (1..=4).map(|i| i % engine.config().vocab_size as u32).collect();
    engine.generate(&mut engine.new_session(), &prompt, &params, &CancelToken::new(), &mut steps)?;
    let shards: Vec<std::path::PathBuf> = std::fs::read_dir(&args.model.model)
        .map_err(|e| input_error(format!("{}: {e}", args.model.model.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    let io_threads = args.model.memory.io_threads.max(1);
    // Expert reads: whole-expert windows on the I/O pool's queue depth.
    let window = (engine.footprint().expert_bytes as usize).max(1);
    // Trunk reads: one layer run at a time from trunk.bin, concurrently with the expert
    // readers, as the engine reads (the ring's reader and the I/O pool run together).
    let trunk_window = plan.as_ref().map(|p| p.ring_slot_bytes as usize).unwrap_or(0).clamp(1 << 20, 512 << 20);
    let trunk_files: Vec<std::path::PathBuf> = args.model.memory.trunk.iter().map(|t| t.join("trunk.bin")).collect();
    let (expert_gbps, trunk_gbps) = std::thread::scope(|s| {
        let experts = s.spawn(|| direct_read_gbps(&shards, window, io_threads, 1_000_000_000));
        let trunk = s.spawn(|| {
            if trunk_files.is_empty() {
                Ok(0.0)
            } else {
                direct_read_gbps(&trunk_files, trunk_window, 1, 2_000_000_000)
            }
        });
        (experts.join().unwrap_or(Ok(0.0)), trunk.join().unwrap_or(Ok(0.0)))
    });
    let (expert_gbps, trunk_gbps) = (expert_gbps?, trunk_gbps?);
    let trunk_gbps = if trunk_files.is_empty() { expert_gbps } else { trunk_gbps };
    let s_per_token = mean(&steps.seconds);
    let (trunk_bytes, expert_bytes) = (mean(&steps.trunk_bytes), mean(&steps.expert_bytes));
    let bytes = trunk_bytes + expert_bytes;
    // The two streams were measured running together: their sum is the drive's aggregate
    // O_DIRECT bandwidth for the engine's mix of reads.
    let aggregate_gbps = if trunk_files.is_empty() { expert_gbps } else { expert_gbps + trunk_gbps };
    let io_floor = if aggregate_gbps > 0.0 { bytes / (aggregate_gbps * 1e9) } else { 0.0 };
    let compute = (s_per_token - mean(&steps.io_wait)).max(0.0);
    let floor = io_floor.max(compute);
    let v = json!({
        "tokens": steps.seconds.len(),
        "seconds_per_token": s_per_token,
        "trunk_bytes_per_token": mean(&steps.trunk_bytes),
        "expert_bytes_per_token": mean(&steps.expert_bytes),
        "io_wait_seconds_per_token": mean(&steps.io_wait),
        "compute_seconds_per_token": compute,
        "direct_read_gbps_experts": expert_gbps,
        "direct_read_gbps_trunk": trunk_gbps,
        "direct_read_gbps_aggregate": aggregate_gbps,
        "expert_window_bytes": window,
        "trunk_window_bytes": trunk_window,
        "io_floor_seconds": io_floor,
        "compute_floor_seconds": compute,
        "ratio_to_larger_floor": if floor > 0.0 { s_per_token / floor } else { 0.0 },
        "pinned_layers": plan.as_ref().map(|p| p.pinned_layers),
        "cache_slots": plan.as_ref().map(|p| p.cache_slots),
    });
    if args.json {
        println!("{v}");
    } else {
        println!(
            "{:.2} s/token over {} tokens · read {:.2} GB/token (trunk {:.2}, experts {:.2}) · I/O wait {:.2} s, compute {:.2} s",
            s_per_token, steps.seconds.len(), bytes / 1e9, mean(&steps.trunk_bytes) / 1e9, mean(&steps.expert_bytes) / 1e9,
            mean(&steps.io_wait), compute
        );
        println!(
            "O_DIRECT read: experts {expert_gbps:.2} GB/s ({window} B windows × {io_threads}), trunk {trunk_gbps:.2} GB/s, together {aggregate_gbps:.2} GB/s → I/O floor {io_floor:.2} s; compute floor {compute:.2} s; measured / larger floor = {:.2}",
            v["ratio_to_larger_floor"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}
