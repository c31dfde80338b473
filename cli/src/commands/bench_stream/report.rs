//! What `k3 bench stream` prints: one run's figures or the comparison of two variants
//! (k3-bench's typed results), as text or as their derived `--json`.

use k3_bench::stream::{Comparison, StreamRun};

use crate::out::Json;

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
