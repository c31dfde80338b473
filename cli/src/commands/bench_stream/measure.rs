//! One measured run of `k3 bench stream`: the engine decoding as the flags say, per-token
//! figures from its events, the drive's best read just before and just after it, and the
//! floors they give; and the comparison of two variants' runs.

use k3_engine::{CancelToken, DecodeMode, EventSink, GenerateParams, Sampling, TokenEvent};
use k3_store::{best_over, floor_grid};

use super::report::{Comparison, StreamRun, VersusRun};
use crate::args::ModelArgs;
use crate::commands::{load_engine, Failure};
use k3_plan::stats::{mean, median};

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

/// One measured run of the engine as `model` says, with the drive's best read just
/// before and just after it.
pub(super) fn measure(model: &ModelArgs, tokens: usize) -> Result<StreamRun, Failure> {
    // The floor is the drive's best, never the engine's own read pattern: the fastest
    // point measured on the same files just before and just after the engine runs (a
    // virtual disk's bandwidth moves with bursts and host caching; the best figure the
    // machine shows is the floor).
    let groups = [
        crate::commands::disk::shards(&model.model)?,
        model.memory.trunk.iter().map(|t| t.join("trunk.bin")).collect(),
    ];
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
    Ok(StreamRun {
        tokens: steps.seconds.len(),
        seconds_per_token: s_per_token,
        trunk_bytes_per_token: trunk_bytes,
        expert_bytes_per_token: expert_bytes,
        io_wait_seconds_per_token: mean(&steps.io_wait),
        compute_seconds_per_token: compute,
        drive_busy_share: if s_per_token > 0.0 { busy / s_per_token } else { 0.0 },
        reads_in_flight_while_busy: if busy > 0.0 { mean(&steps.read_piece_time) / busy } else { 0.0 },
        trunk_decode_seconds_per_token: mean(&steps.trunk_decode),
        drive_best_gbps: best_gbps,
        drive_best_request_bytes: best.map(|b| b.request_bytes),
        drive_best_depth: best.map(|b| b.depth),
        drive_best_access: best.map(|b| b.access),
        drive_best_before_gbps: before.map(|b| b.gbps),
        drive_best_after_gbps: after.map(|b| b.gbps),
        drive_direct: direct_before && direct_after,
        achieved_read_gbps: achieved_gbps,
        achieved_over_drive_best: if best_gbps > 0.0 { achieved_gbps / best_gbps } else { 0.0 },
        read_request_bytes: pattern.request_bytes,
        read_depth: pattern.depth,
        io_floor_seconds: io_floor,
        compute_floor_seconds: compute,
        ratio_to_larger_floor: if floor > 0.0 { s_per_token / floor } else { 0.0 },
        pinned_layers: plan.as_ref().map(|p| p.pinned_layers),
        residency: plan.as_ref().map(|p| crate::commands::plan::residency_runs(&p.residency)),
        ring_slots: plan.as_ref().map(|p| p.ring_slots),
        cache_slots: plan.as_ref().map(|p| p.cache_slots),
    })
}

/// The two variants' runs side by side: the ratio of their means, and the median of each
/// round's ratio.
pub(super) fn compare(labels: [String; 2], runs: [Vec<VersusRun>; 2]) -> Comparison {
    let mean_of = |vs: &[VersusRun]| mean(&vs.iter().map(|v| v.run.seconds_per_token).collect::<Vec<_>>());
    let (a, b) = (mean_of(&runs[0]), mean_of(&runs[1]));
    // Each round's two runs are back to back, so their ratio shares the drive's state of
    // the moment; the median of those ratios is not moved by one round on a disturbed
    // shared machine the way the ratio of means is.
    let round_speedups: Vec<f64> =
        runs[0].iter().zip(&runs[1]).map(|(x, y)| x.run.seconds_per_token / y.run.seconds_per_token).collect();
    let [first, versus] = labels;
    let [first_runs, versus_runs] = runs;
    Comparison {
        first,
        versus,
        first_runs,
        versus_runs,
        first_seconds_per_token: a,
        versus_seconds_per_token: b,
        versus_speedup: if b > 0.0 { a / b } else { 0.0 },
        median_round_speedup: median(&round_speedups),
        round_speedups,
    }
}
