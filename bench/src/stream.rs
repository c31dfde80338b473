//! `k3 bench stream`: one streamed run's figures ([`StreamRun`], from the decode steps'
//! [`StepSamples`], the drive's best read around the run and the plan it ran with), a run of
//! one side of a comparison ([`VersusRun`]) and the comparison of two ([`Comparison`]).

use k3_engine::{EventSink, TokenEvent};
use k3_plan::stats::{mean, median};
use k3_store::{Access, DiskPoint};
use serde::Serialize;

use crate::ratio;

/// Per-token figures of the decode steps, collected from the engine's token events (the
/// prompt's prefill, event 0, is not a step).
#[derive(Default)]
pub struct StepSamples {
    seconds: Vec<f64>,
    trunk_bytes: Vec<f64>,
    expert_bytes: Vec<f64>,
    io_wait: Vec<f64>,
    drive_busy: Vec<f64>,
    read_piece_time: Vec<f64>,
    trunk_decode: Vec<f64>,
}

impl EventSink for StepSamples {
    fn token(&mut self, e: &TokenEvent<'_>) {
        if e.index == 0 {
            return;
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

/// The drive's best read on the same files just before and just after the run (the floor is
/// the best figure the machine shows, never the engine's own pattern), and whether both
/// sweeps bypassed the page cache.
pub struct DriveBest {
    pub before: Option<DiskPoint>,
    pub after: Option<DiskPoint>,
    pub direct: bool,
}

/// What the run ran with: the engine's read pattern and, when it planned, its plan.
pub struct RunSetting {
    pub read_request_bytes: usize,
    pub read_depth: usize,
    pub pinned_layers: Option<usize>,
    /// The residency in runs of layers (`k3 plan`'s words).
    pub residency: Option<String>,
    pub ring_slots: Option<usize>,
    pub cache_slots: Option<u64>,
}

/// One measured run: per-token time, bytes and waits, the drive's best read around it, the
/// floors and the plan it ran with.
#[derive(Serialize, Default)]
pub struct StreamRun {
    pub tokens: usize,
    pub seconds_per_token: f64,
    pub trunk_bytes_per_token: f64,
    pub expert_bytes_per_token: f64,
    pub io_wait_seconds_per_token: f64,
    pub compute_seconds_per_token: f64,
    /// Share of each token's wall clock with any read in flight, the mean number in flight
    /// then, and the decode time of coded layers (on the read-ahead's threads, overlapping
    /// compute).
    pub drive_busy_share: f64,
    pub reads_in_flight_while_busy: f64,
    pub trunk_decode_seconds_per_token: f64,
    pub drive_best_gbps: f64,
    pub drive_best_request_bytes: Option<usize>,
    pub drive_best_depth: Option<usize>,
    pub drive_best_access: Option<Access>,
    pub drive_best_before_gbps: Option<f64>,
    pub drive_best_after_gbps: Option<f64>,
    pub drive_direct: bool,
    pub achieved_read_gbps: f64,
    pub achieved_over_drive_best: f64,
    pub read_request_bytes: usize,
    pub read_depth: usize,
    pub io_floor_seconds: f64,
    pub compute_floor_seconds: f64,
    pub ratio_to_larger_floor: f64,
    pub pinned_layers: Option<usize>,
    pub residency: Option<String>,
    pub ring_slots: Option<usize>,
    pub cache_slots: Option<u64>,
}

impl StreamRun {
    /// The run's figures: means over its steps; the I/O floor is its bytes at the drive's
    /// best rate, the compute floor its time less the I/O wait.
    pub fn from_samples(steps: &StepSamples, drive: DriveBest, setting: RunSetting) -> Self {
        let best = [drive.before, drive.after].into_iter().flatten().max_by(|a, b| a.gbps.total_cmp(&b.gbps));
        let best_gbps = best.map_or(0.0, |b| b.gbps);
        let s_per_token = mean(&steps.seconds);
        let (trunk_bytes, expert_bytes) = (mean(&steps.trunk_bytes), mean(&steps.expert_bytes));
        let bytes = trunk_bytes + expert_bytes;
        let io_floor = ratio(bytes, best_gbps * 1e9);
        let achieved_gbps = ratio(bytes, s_per_token) / 1e9;
        let io_wait = mean(&steps.io_wait);
        let compute = (s_per_token - io_wait).max(0.0);
        let busy = mean(&steps.drive_busy);
        StreamRun {
            tokens: steps.seconds.len(),
            seconds_per_token: s_per_token,
            trunk_bytes_per_token: trunk_bytes,
            expert_bytes_per_token: expert_bytes,
            io_wait_seconds_per_token: io_wait,
            compute_seconds_per_token: compute,
            drive_busy_share: ratio(busy, s_per_token),
            reads_in_flight_while_busy: ratio(mean(&steps.read_piece_time), busy),
            trunk_decode_seconds_per_token: mean(&steps.trunk_decode),
            drive_best_gbps: best_gbps,
            drive_best_request_bytes: best.map(|b| b.request_bytes),
            drive_best_depth: best.map(|b| b.depth),
            drive_best_access: best.map(|b| b.access),
            drive_best_before_gbps: drive.before.map(|b| b.gbps),
            drive_best_after_gbps: drive.after.map(|b| b.gbps),
            drive_direct: drive.direct,
            achieved_read_gbps: achieved_gbps,
            achieved_over_drive_best: ratio(achieved_gbps, best_gbps),
            read_request_bytes: setting.read_request_bytes,
            read_depth: setting.read_depth,
            io_floor_seconds: io_floor,
            compute_floor_seconds: compute,
            ratio_to_larger_floor: ratio(s_per_token, io_floor.max(compute)),
            pinned_layers: setting.pinned_layers,
            residency: setting.residency,
            ring_slots: setting.ring_slots,
            cache_slots: setting.cache_slots,
        }
    }
}

/// A run of one side of a comparison: its figures, then which side and whether the page
/// cache was dropped before it.
#[derive(Serialize)]
pub struct VersusRun {
    #[serde(flatten)]
    pub run: StreamRun,
    pub variant: String,
    pub page_cache_dropped: bool,
}

/// Two variants alternated in one run of the command.
#[derive(Serialize)]
pub struct Comparison {
    pub first: String,
    pub versus: String,
    pub first_runs: Vec<VersusRun>,
    pub versus_runs: Vec<VersusRun>,
    pub first_seconds_per_token: f64,
    pub versus_seconds_per_token: f64,
    pub versus_speedup: f64,
    pub round_speedups: Vec<f64>,
    pub median_round_speedup: f64,
}

impl Comparison {
    /// The two variants' runs side by side: the ratio of their means, and the median of each
    /// round's ratio.
    pub fn of(labels: [String; 2], runs: [Vec<VersusRun>; 2]) -> Self {
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
            versus_speedup: ratio(a, b),
            median_round_speedup: median(&round_speedups),
            round_speedups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compared_run_is_the_run_then_its_variant_and_whether_the_page_cache_was_dropped() {
        let run =
            StreamRun {
                tokens: 2, seconds_per_token: 0.5, residency: Some("0–3 pinned".into()), ..Default::default()
            };
        let v = VersusRun { run, variant: "--residency cost".into(), page_cache_dropped: false };
        let text = serde_json::to_string(&v).unwrap();
        assert!(text.starts_with(r#"{"tokens":2,"seconds_per_token":0.5,"trunk_bytes_per_token":0.0,"#), "{text}");
        let end = r#""residency":"0–3 pinned","ring_slots":null,"cache_slots":null,"variant":"--residency cost","page_cache_dropped":false}"#;
        assert!(text.ends_with(end), "{text}");
    }

    fn run_at(seconds_per_token: f64) -> VersusRun {
        VersusRun {
            run: StreamRun { seconds_per_token, ..Default::default() },
            variant: String::new(),
            page_cache_dropped: true,
        }
    }

    #[test]
    fn a_comparison_is_the_ratio_of_means_and_the_median_of_the_rounds_ratios() {
        let c = Comparison::of(
            ["raw".into(), "huffman".into()],
            [vec![run_at(2.0), run_at(4.0), run_at(3.0)], vec![run_at(1.0), run_at(4.0), run_at(1.5)]],
        );
        assert_eq!((c.first_seconds_per_token, c.versus_seconds_per_token), (3.0, 6.5 / 3.0));
        assert_eq!(c.round_speedups, vec![2.0, 1.0, 2.0]);
        assert_eq!(c.median_round_speedup, 2.0);
        assert!((c.versus_speedup - 3.0 / (6.5 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn the_floors_come_from_the_drives_best_and_the_time_not_spent_waiting() {
        let point = |gbps| DiskPoint {
            access: Access::Sequential,
            request_bytes: 4 << 20,
            depth: 8,
            gbps,
            bytes_read: 0,
            seconds: 0.0,
        };
        let steps = StepSamples {
            seconds: vec![2.0, 2.0],
            trunk_bytes: vec![1e9, 1e9],
            expert_bytes: vec![3e9, 3e9],
            io_wait: vec![0.5, 0.5],
            drive_busy: vec![1.0, 1.0],
            read_piece_time: vec![4.0, 4.0],
            trunk_decode: vec![0.0, 0.0],
        };
        let setting = RunSetting {
            read_request_bytes: 1 << 20,
            read_depth: 4,
            pinned_layers: None,
            residency: None,
            ring_slots: None,
            cache_slots: None,
        };
        let r = StreamRun::from_samples(
            &steps,
            DriveBest { before: Some(point(2.0)), after: Some(point(4.0)), direct: true },
            setting,
        );
        assert_eq!(r.drive_best_gbps, 4.0);
        assert_eq!(r.io_floor_seconds, 1.0); // 4 GB at 4 GB/s
        assert_eq!(r.compute_floor_seconds, 1.5);
        assert_eq!(r.ratio_to_larger_floor, 2.0 / 1.5);
        assert_eq!((r.achieved_read_gbps, r.achieved_over_drive_best), (2.0, 0.5));
        assert_eq!((r.drive_busy_share, r.reads_in_flight_while_busy), (0.5, 4.0));
    }
}
