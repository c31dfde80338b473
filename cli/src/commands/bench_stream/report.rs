//! What `k3 bench stream` reports: one run's figures ([`StreamRun`]), a run of a compared
//! variant ([`VersusRun`]) and the comparison of two ([`Comparison`]) — typed results whose
//! `--json` is derived from them (field order is key order) — and their text.

use k3_store::Access;
use serde::Serialize;

use crate::out::Json;

/// One measured run: per-token time, bytes and waits, the drive's best read around it, the
/// floors and the plan it ran with.
#[derive(Serialize)]
#[cfg_attr(test, derive(Default))]
pub(super) struct StreamRun {
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

/// A run of one side of a comparison: its figures, then which side and whether the page
/// cache was dropped before it.
#[derive(Serialize)]
pub(super) struct VersusRun {
    #[serde(flatten)]
    pub run: StreamRun,
    pub variant: String,
    pub page_cache_dropped: bool,
}

/// Two variants alternated in one run of the command.
#[derive(Serialize)]
pub(super) struct Comparison {
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

/// Prints one run (`label` names it when runs are compared; compared runs' JSON is the
/// comparison's).
pub(super) fn print_run(r: &StreamRun, json: bool, label: Option<&str>) {
    if json {
        if label.is_none() {
            outln!("{}", Json(r));
        }
        return;
    }
    if let Some(label) = label {
        outln!("{label}:");
    }
    if let Some(residency) = &r.residency {
        outln!("plan: {residency} · ring {} · {} cache slots", r.ring_slots.unwrap_or(0), r.cache_slots.unwrap_or(0));
    }
    let (trunk_bytes, expert_bytes) = (r.trunk_bytes_per_token, r.expert_bytes_per_token);
    outln!(
        "{:.2} s/token over {} tokens · read {:.2} GB/token (trunk {:.2}, experts {:.2}) · I/O wait {:.2} s, compute {:.2} s",
        r.seconds_per_token, r.tokens, (trunk_bytes + expert_bytes) / 1e9, trunk_bytes / 1e9, expert_bytes / 1e9,
        r.io_wait_seconds_per_token, r.compute_seconds_per_token
    );
    outln!(
        "the drive had a read in flight {:.0} % of the time, {:.1} on average · coded layers decoded for {:.2} s/token",
        100.0 * r.drive_busy_share,
        r.reads_in_flight_while_busy,
        r.trunk_decode_seconds_per_token
    );
    outln!(
        "reading at {:.2} of {:.2} GB/s (the drive's best: {} MiB × {} in flight; the engine reads {} MiB × {}) → I/O floor {:.2} s; compute floor {:.2} s; measured / larger floor = {:.2}",
        r.achieved_read_gbps, r.drive_best_gbps, r.drive_best_request_bytes.unwrap_or(0) >> 20,
        r.drive_best_depth.unwrap_or(0), r.read_request_bytes >> 20, r.read_depth, r.io_floor_seconds,
        r.compute_floor_seconds, r.ratio_to_larger_floor
    );
}

/// Prints the comparison: its JSON, or one line of means and round ratios.
pub(super) fn print_comparison(c: &Comparison, json: bool) {
    if json {
        outln!("{}", Json(c));
        return;
    }
    let (first, second) = (&c.first, &c.versus);
    let (a, b, speedup) = (c.first_seconds_per_token, c.versus_seconds_per_token, c.versus_speedup);
    outln!(
        "{first}: {a:.3} s/token · {second}: {b:.3} s/token (means of {} runs each, in one run of this command) → {second} is {speedup:.2} × as fast; round by round {} → median {:.2} ×",
        c.first_runs.len(),
        c.round_speedups.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", "),
        c.median_round_speedup
    );
}

#[cfg(test)]
mod tests {
    use super::{StreamRun, VersusRun};

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
}
