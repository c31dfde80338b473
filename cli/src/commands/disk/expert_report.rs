//! How `k3 bench disk` (default mode) prints without `--json`: a short table of each queue
//! depth against the NVMe drives of the published speeds.

use k3_plan::format_count;
use k3_store::ExpertReadReport;

/// The NVMe drives of the published speeds (spec §11): the memory ladder's and the headline's.
const REFERENCE_DRIVES: [(f64, &str); 2] = [(3.2e9, "EPYC 7763 memory ladder"), (4.6e9, "headline speed box")];

/// Said whenever a file system refused O_DIRECT.
pub(super) const BUFFERED_NOTE: &str =
    "this file system refused O_DIRECT: reads were buffered, each file's cached pages \
     dropped before each pass and after each read (as the engine reads there); `direct: false`";

pub(super) fn print_table(report: &ExpertReadReport, seconds: f64) {
    let how = if report.direct { "O_DIRECT" } else { "BUFFERED (O_DIRECT refused)" };
    outln!(
        "Expert reads: {} B each, {how}, random 4 KiB-aligned offsets, ~{seconds} s per queue depth",
        format_count(report.block_bytes as u64)
    );
    match report.files.as_slice() {
        [one] => outln!("on {}", one.display()),
        many => outln!("on {} files", many.len()),
    }
    outln!();
    outln!(
        "{:<8} {:>9} {:>10} {:>8} {:>8} {:>12} {:>12}",
        "",
        "MB/s",
        "experts/s",
        "p50 ms",
        "p99 ms",
        "vs 3.2 GB/s",
        "vs 4.6 GB/s"
    );
    for p in &report.passes {
        let vs = REFERENCE_DRIVES.map(|(bytes_per_s, _)| format!("{:.0} %", p.mb_per_s * 1e6 / bytes_per_s * 100.0));
        outln!(
            "{:<8} {:>9.1} {:>10.1} {:>8.1} {:>8.1} {:>12} {:>12}",
            format!("QD{}", p.depth),
            p.mb_per_s,
            p.experts_per_s,
            p.p50_ms,
            p.p99_ms,
            vs[0],
            vs[1]
        );
    }
    for (bytes_per_s, what) in REFERENCE_DRIVES {
        let experts = bytes_per_s / report.block_bytes as f64;
        outln!("{:<8} {:>9.1} {:>10.1}   NVMe of the published speeds ({what})", "NVMe", bytes_per_s / 1e6, experts);
    }
    if !report.direct {
        outln!();
        outln!("WARNING: {BUFFERED_NOTE}");
    }
}
