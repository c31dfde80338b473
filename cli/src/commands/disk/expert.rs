//! `k3 bench disk` (default mode): the drive read as the engine reads experts — O_DIRECT,
//! one 17,547,264-byte expert per read at random 4 KiB-aligned offsets, queue depth 1 and
//! 16 — printed as a short table against the 3.2 and 4.6 GB/s NVMe drives of the published
//! speeds, or as one JSON object (`qd1`, `qd16`, `block_bytes`, `direct`, `files`).
//! `--depths` measures other queue depths (JSON keys `qd<N>`). Ctrl-C stops the
//! measurement; the scratch file is removed on the way out.
//! [`super::expert_report`] prints the table, [`super::expert_json`] the JSON.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use k3_bench::disk::ExpertReport;
use k3_store::{measure_expert_reads, ExpertReadProgress, ExpertReadRequest};

use super::expert_report::{print_table, BUFFERED_NOTE};
use super::flags::{csv_list, targets};
use crate::args::BenchDiskArgs;
use crate::commands::{input_error, Failure};

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
        outln!("{}", crate::out::Json(&ExpertReport::of(&report, args.seconds)));
    } else {
        print_table(&report, args.seconds);
    }
    Ok(())
}

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
