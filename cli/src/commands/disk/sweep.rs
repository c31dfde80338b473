//! `k3 bench disk --sweep`: O_DIRECT bandwidth over request size × requests in flight, and
//! `--save`, the best point for the engine's `--read-pattern`; `--json` derived from k3-bench's
//! typed [`SweepReport`].

use std::sync::atomic::AtomicBool;

use k3_bench::disk::SweepReport;
use k3_store::{sweep as measure, DiskSweep, SavedPattern, SweepRequest};

use super::flags::{csv_list, size_flag, targets};
use crate::args::BenchDiskArgs;
use crate::commands::{input_error, runtime_error, Failure};

pub fn sweep(args: BenchDiskArgs) -> Result<(), Failure> {
    let bytes_per_point = size_flag("--bytes-per-point", args.bytes_per_point.as_deref().unwrap_or("512MB"))?;
    let (files, _scratch) = targets(&args, "4GB", &AtomicBool::new(false))?;
    let mut req = SweepRequest::full(files, bytes_per_point);
    if let Some(csv) = &args.sizes {
        req.sizes = csv_list("--sizes", csv)?.into_iter().map(|m| m * k3_store::diskbench::MIB).collect();
    }
    if let Some(csv) = &args.depths {
        req.depths = csv_list("--depths", csv)?;
    }
    let result = measure(&req)?;
    let Some(report) = SweepReport::of(&result) else {
        return Err(input_error(
            "bench disk: no file is at least two requests long; give larger files or a folder".into(),
        ));
    };
    if let Some(path) = &args.save {
        let saved = SavedPattern {
            request_bytes: report.best.request_bytes,
            depth: report.best.depth,
            gbps: report.best.gbps,
            direct: result.direct,
            measured_on: result.files.clone(),
        };
        let text = serde_json::to_string_pretty(&saved).map_err(|e| runtime_error(e.to_string()))?;
        std::fs::write(path, text).map_err(|e| runtime_error(format!("writing {}: {e}", path.display())))?;
    }
    if args.json {
        outln!("{}", crate::out::Json(&report));
    } else {
        print_table(&result);
    }
    Ok(())
}

fn print_table(result: &DiskSweep) {
    if !result.direct {
        outln!("note: this file system refused O_DIRECT; the figures include the page cache, not the drive's");
    }
    for p in &result.points {
        let access = match p.access {
            k3_store::Access::Random => "random",
            k3_store::Access::Sequential => "sequential",
        };
        outln!("{access:>10} {:>3} MiB × {:>2} in flight: {:>6.2} GB/s", p.request_bytes >> 20, p.depth, p.gbps);
    }
    if let Some(b) = result.best() {
        outln!("best: {:?} {} MiB × {} in flight = {:.2} GB/s", b.access, b.request_bytes >> 20, b.depth, b.gbps);
    }
}
