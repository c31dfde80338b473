//! `k3 bench disk` (default mode): the drive read as the engine reads experts — O_DIRECT,
//! one 17,547,264-byte expert per read at random 4 KiB-aligned offsets, queue depth 1 and
//! 16 — printed as a short table against the 3.2 and 4.6 GB/s NVMe drives of the published
//! speeds, or as one JSON object (`qd1`, `qd16`, `block_bytes`, `direct`, `files`).
//! `--depths` measures other queue depths (JSON keys `qd<N>`). Ctrl-C stops the
//! measurement; the scratch file is removed on the way out.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use k3_store::{measure_expert_reads, ExpertReadProgress, ExpertReadReport, ExpertReadRequest, PassFigures};
use serde_json::{json, Map, Value};

use super::{csv_list, targets};
use crate::args::BenchDiskArgs;
use crate::commands::{input_error, Failure};

/// The NVMe drives of the published speeds (spec §11): the memory ladder's and the headline's.
const REFERENCE_DRIVES: [(f64, &str); 2] = [(3.2e9, "EPYC 7763 memory ladder"), (4.6e9, "headline speed box")];

/// The longest a queue depth may read for (probe finding: `--seconds 1e19` panicked).
const MAX_SECONDS: f64 = 3600.0;

pub fn expert(args: BenchDiskArgs) -> Result<(), Failure> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= MAX_SECONDS) {
        return Err(input_error(format!(
            "--seconds {}: give a number above 0 and at most {MAX_SECONDS}",
            args.seconds
        )));
    }
    let cancel = ctrl_c_flag();
    let (files, _scratch) = targets(&args, "2GiB", &cancel)?;
    let mut req = ExpertReadRequest::new(files, args.seconds);
    if let Some(csv) = &args.depths {
        req.depths = csv_list("--depths", csv)?;
    }
    let terminal = std::io::stderr().is_terminal();
    let mut bar = |p: ExpertReadProgress| {
        if terminal {
            eprint!("\r{}", bar_line(&p));
        }
    };
    let result = measure_expert_reads(&req, &mut bar, &cancel);
    if terminal {
        eprint!("\r{:78}\r", "");
    }
    let report = result?;
    if !report.direct {
        eprintln!("k3: WARNING: {}", BUFFERED_NOTE);
    }
    if args.json {
        outln!("{}", report_json(&report, args.seconds));
    } else {
        print_table(&report, args.seconds);
    }
    Ok(())
}

/// Said whenever a file system refused O_DIRECT.
const BUFFERED_NOTE: &str = "this file system refused O_DIRECT: reads were buffered, each file's cached pages \
     dropped before each pass and after each read (as the engine reads there); `direct: false`";

/// A flag Ctrl-C raises (unset, and Ctrl-C ends the process, if no handler can be installed).
fn ctrl_c_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = Arc::clone(&flag);
    // Ctrl-C, SIGTERM and SIGHUP (ctrlc's `termination`) stop the bench; its scratch file
    // is removed as it unwinds.
    if ctrlc::set_handler(move || raised.store(true, Ordering::Relaxed)).is_err() {
        eprintln!("k3: Ctrl-C cannot be caught here; a scratch file may be left behind if interrupted");
    }
    flag
}

fn bar_line(p: &ExpertReadProgress) -> String {
    const WIDTH: usize = 30;
    let filled = ((p.fraction() * WIDTH as f64) as usize).min(WIDTH);
    format!(
        "[{}{}] QD{:<2} {:>5.1}/{:.0} s · {:>7.1} MB/s ",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        p.depth,
        p.elapsed_seconds.min(p.pass_seconds),
        p.pass_seconds,
        p.mb_per_s
    )
}

/// `17547264` → `17,547,264`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

fn pass_json(p: &PassFigures) -> Value {
    json!({
        "mb_per_s": round(p.mb_per_s, 3),
        "experts_per_s": round(p.experts_per_s, 5),
        "p50_ms": round(p.p50_ms, 3),
        "p99_ms": round(p.p99_ms, 3),
        "reads": p.reads,
        "seconds": round(p.seconds, 3),
    })
}

fn report_json(report: &ExpertReadReport, seconds: f64) -> Value {
    let mut out = Map::new();
    for p in &report.passes {
        out.insert(format!("qd{}", p.depth), pass_json(p));
    }
    out.insert("block_bytes".into(), json!(report.block_bytes));
    out.insert("direct".into(), json!(report.direct));
    out.insert("files".into(), json!(report.files));
    out.insert("seconds_per_pass".into(), json!(seconds));
    Value::Object(out)
}

fn print_table(report: &ExpertReadReport, seconds: f64) {
    let how = if report.direct { "O_DIRECT" } else { "BUFFERED (O_DIRECT refused)" };
    outln!(
        "Expert reads: {} B each, {how}, random 4 KiB-aligned offsets, ~{seconds} s per queue depth",
        thousands(report.block_bytes as u64)
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

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated() {
        assert_eq!(super::thousands(17_547_264), "17,547,264");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1,000");
    }
}
