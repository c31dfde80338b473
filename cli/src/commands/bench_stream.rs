//! `k3 bench stream`: streamed decode against the honest I/O floor (the drive's best
//! measured read, never the engine's own pattern) and the compute time; with `--versus DIR`,
//! two packed trunks (e.g. raw and `--codec huffman`) alternated in one run, with the ratio;
//! with `--versus-residency RULE`, the same trunk under two residency rules (`prefix`,
//! `cost`: the cost rule's rates measured once, before the first run).

use k3_engine::{CancelToken, DecodeMode, EventSink, GenerateParams, Sampling, TokenEvent};
use k3_store::{best_over, floor_grid};
use serde_json::{json, Value};

use super::{input_error, load_engine, Failure};
use crate::args::{BenchStreamArgs, ModelArgs};

/// Per-token figures of a decode step.
#[derive(Default)]
struct Steps {
    seconds: Vec<f64>,
    trunk_bytes: Vec<f64>,
    expert_bytes: Vec<f64>,
    io_wait: Vec<f64>,
    drive_busy: Vec<f64>,
    read_piece_time: Vec<f64>,
    trunk_decode: Vec<f64>,
}

impl EventSink for Steps {
    fn token(&mut self, e: &TokenEvent<'_>) {
        if e.index == 0 {
            return; // the prompt's prefill
        }
        self.seconds.push(e.elapsed.as_secs_f64());
        // The forecast counts the head, read when used, with the trunk's reads.
        self.trunk_bytes.push((e.metrics.trunk_bytes_read + e.metrics.vocab_bytes_read) as f64);
        self.expert_bytes.push(e.metrics.expert_bytes_read as f64);
        self.io_wait.push(e.metrics.io_wait().as_secs_f64());
        self.drive_busy.push(e.metrics.drive_busy.as_secs_f64());
        self.read_piece_time.push(e.metrics.read_piece_time.as_secs_f64());
        self.trunk_decode.push(e.metrics.trunk_decode.as_secs_f64());
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
pub(super) fn median(v: &[f64]) -> f64 {
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

pub fn stream(mut args: BenchStreamArgs) -> Result<(), Failure> {
    if args.model.memory.preset.is_none() && args.model.memory.cache_budget.is_none() {
        return Err(input_error("bench stream needs a budget: --preset P or --trunk-budget/--cache-budget".into()));
    }
    // A 4-token prompt, then the measured steps, within the context the plan reserves (what
    // the measurement is told, not what this machine's free memory allows).
    let context = *args.model.memory.context_length.get_or_insert(k3_engine::DEFAULT_CONTEXT_LENGTH);
    if args.tokens == 0 || args.tokens.saturating_add(5) > context {
        return Err(input_error(format!(
            "--tokens {}: use 1 to {} (the context length less the prompt)",
            args.tokens,
            context.saturating_sub(5)
        )));
    }
    if args.model.memory.residency == "cost" || args.versus_residency.as_deref() == Some("cost") {
        // Measured once, so every run of this command plans from the same rates.
        let pattern = super::disk::read_pattern(&args.model.memory)?;
        args.model.memory.measured_rates = Some(super::cost_rates::measure(&args.model.memory, pattern)?);
    }
    let variants = match (args.versus.take(), args.versus_residency.take()) {
        (None, None) => {
            let v = measure(&args.model, args.tokens)?;
            print(&v, args.json, None);
            return Ok(());
        }
        (Some(versus), None) => {
            let Some(first) = args.model.memory.trunk.clone() else {
                return Err(input_error(
                    "--versus DIR compares two packed trunks: give the first with --trunk DIR".into(),
                ));
            };
            [Variant::Trunk(first), Variant::Trunk(versus)]
        }
        (None, Some(rule)) => [Variant::Residency(args.model.memory.residency.clone()), Variant::Residency(rule)],
        (Some(_), Some(_)) => return Err(input_error("give --versus DIR or --versus-residency RULE, not both".into())),
    };
    let mut runs: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds.max(1) {
        // Alternate the order, so a drive that warms up or slows down favours neither.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            variants[which].apply(&mut args.model);
            let dropped = drop_page_cache();
            let mut v = measure(&args.model, args.tokens)?;
            v["variant"] = json!(variants[which].label());
            v["page_cache_dropped"] = json!(dropped);
            print(&v, args.json, Some(&format!("round {}, {}", round + 1, variants[which].label())));
            runs[which].push(v);
        }
    }
    let mean_of = |vs: &[Value]| mean(&vs.iter().filter_map(|v| v["seconds_per_token"].as_f64()).collect::<Vec<_>>());
    let (a, b) = (mean_of(&runs[0]), mean_of(&runs[1]));
    let speedup = if b > 0.0 { a / b } else { 0.0 };
    // Each round's two runs are back to back, so their ratio shares the drive's state of
    // the moment; the median of those ratios is not moved by one round on a disturbed
    // shared machine the way the ratio of means is.
    let round_ratios: Vec<f64> = runs[0]
        .iter()
        .zip(&runs[1])
        .filter_map(|(x, y)| Some(x["seconds_per_token"].as_f64()? / y["seconds_per_token"].as_f64()?))
        .collect();
    let median_ratio = median(&round_ratios);
    let (first, second) = (variants[0].label(), variants[1].label());
    if args.json {
        outln!(
            "{}",
            json!({ "first": first, "versus": second, "first_runs": runs[0], "versus_runs": runs[1],
            "first_seconds_per_token": a, "versus_seconds_per_token": b, "versus_speedup": speedup,
            "round_speedups": round_ratios, "median_round_speedup": median_ratio })
        );
    } else {
        outln!(
            "{first}: {a:.3} s/token · {second}: {b:.3} s/token (means of {} runs each, in one run of this command) → {second} is {speedup:.2} × as fast; round by round {} → median {median_ratio:.2} ×",
            runs[0].len(),
            round_ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// What the two sides of a comparison differ in.
enum Variant {
    /// Another packed trunk.
    Trunk(std::path::PathBuf),
    /// The same trunk under another `--residency` rule.
    Residency(String),
}

impl Variant {
    fn apply(&self, model: &mut ModelArgs) {
        match self {
            Variant::Trunk(dir) => model.memory.trunk = Some(dir.clone()),
            Variant::Residency(rule) => model.memory.residency = rule.clone(),
        }
    }

    fn label(&self) -> String {
        match self {
            Variant::Trunk(dir) => dir.display().to_string(),
            Variant::Residency(rule) => format!("--residency {rule}"),
        }
    }
}

/// Tries to drop the page cache before a measured run (needs root); whether it did.
fn drop_page_cache() -> bool {
    let synced = std::process::Command::new("sync").status().is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// One measured run of the engine as `model` says, with the drive's best read just
/// before and just after it.
fn measure(model: &ModelArgs, tokens: usize) -> Result<Value, Failure> {
    // The floor is the drive's best, never the engine's own read pattern: the fastest
    // point measured on the same files just before and just after the engine runs (a
    // virtual disk's bandwidth moves with bursts and host caching; the best figure the
    // machine shows is the floor).
    let groups = [super::disk::shards(&model.model)?, model.memory.trunk.iter().map(|t| t.join("trunk.bin")).collect()];
    let (before, direct_before) = best_over(&groups, &floor_grid())?;
    let engine = load_engine(model)?;
    let plan = engine.plan().cloned();
    let pattern = engine.memory_options().read_pattern;
    let params = GenerateParams {
        max_new_tokens: tokens + 1,
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
    let busy = mean(&steps.drive_busy);
    let floor = io_floor.max(compute);
    let v = json!({
        "tokens": steps.seconds.len(),
        "seconds_per_token": s_per_token,
        "trunk_bytes_per_token": trunk_bytes,
        "expert_bytes_per_token": expert_bytes,
        "io_wait_seconds_per_token": mean(&steps.io_wait),
        "compute_seconds_per_token": compute,
        // Share of each token's wall clock with any read in flight, the mean number in flight
        // then, and the decode time of coded layers (on the read-ahead's threads,
        // overlapping compute).
        "drive_busy_share": if s_per_token > 0.0 { busy / s_per_token } else { 0.0 },
        "reads_in_flight_while_busy": if busy > 0.0 { mean(&steps.read_piece_time) / busy } else { 0.0 },
        "trunk_decode_seconds_per_token": mean(&steps.trunk_decode),
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
        "residency": plan.as_ref().map(|p| super::plan::residency_runs(&p.residency)),
        "ring_slots": plan.as_ref().map(|p| p.ring_slots),
        "cache_slots": plan.as_ref().map(|p| p.cache_slots),
    });
    Ok(v)
}

/// Prints one run (`label` names it when runs are compared).
fn print(v: &Value, json: bool, label: Option<&str>) {
    if json {
        if label.is_none() {
            outln!("{v}");
        }
        return;
    }
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    let u = |k: &str| v[k].as_u64().unwrap_or(0);
    if let Some(label) = label {
        outln!("{label}:");
    }
    if let Some(r) = v["residency"].as_str() {
        outln!("plan: {r} · ring {} · {} cache slots", u("ring_slots"), u("cache_slots"));
    }
    let (trunk_bytes, expert_bytes) = (f("trunk_bytes_per_token"), f("expert_bytes_per_token"));
    outln!(
        "{:.2} s/token over {} tokens · read {:.2} GB/token (trunk {:.2}, experts {:.2}) · I/O wait {:.2} s, compute {:.2} s",
        f("seconds_per_token"), u("tokens"), (trunk_bytes + expert_bytes) / 1e9, trunk_bytes / 1e9, expert_bytes / 1e9,
        f("io_wait_seconds_per_token"), f("compute_seconds_per_token")
    );
    outln!(
        "the drive had a read in flight {:.0} % of the time, {:.1} on average · coded layers decoded for {:.2} s/token",
        100.0 * f("drive_busy_share"),
        f("reads_in_flight_while_busy"),
        f("trunk_decode_seconds_per_token")
    );
    outln!(
        "reading at {:.2} of {:.2} GB/s (the drive's best: {} MiB × {} in flight; the engine reads {} MiB × {}) → I/O floor {:.2} s; compute floor {:.2} s; measured / larger floor = {:.2}",
        f("achieved_read_gbps"), f("drive_best_gbps"), u("drive_best_request_bytes") >> 20, u("drive_best_depth"),
        u("read_request_bytes") >> 20, u("read_depth"), f("io_floor_seconds"), f("compute_floor_seconds"),
        f("ratio_to_larger_floor")
    );
}
