//! The wizard's drive speed test: expert-sized reads at depth 1 and 16 on a scratch file in
//! the chosen folder, then the drive's best read pattern on the same file (the engine then
//! reads the way this drive wants).
//!
//! Must not: leave the scratch file behind (`ScratchFile` removes it when dropped).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use crate::error::{AppError, ErrorKind};
use crate::setup::events::SetupEvent;
use crate::setup::{PatternSummary, SpeedSummary};

/// The drive speed test on `dir` (a scratch file, removed afterwards), each pass's progress
/// told to `emit`.
pub fn speed_test(dir: PathBuf, seconds: f64, emit: &mut dyn FnMut(SetupEvent)) -> Result<SpeedSummary, AppError> {
    use k3_store::diskbench::{measure_expert_reads, ExpertReadRequest, ScratchFile};
    let io = |e: &dyn std::fmt::Display| AppError::new(ErrorKind::Io, format!("speed test in {}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(|e| io(&e))?;
    let cancel = AtomicBool::new(false);
    let scratch = ScratchFile::create(&dir, scratch_bytes(), &cancel).map_err(|e| io(&e))?;
    let req = ExpertReadRequest::new(vec![scratch.path().to_path_buf()], seconds);
    let report = measure_expert_reads(
        &req,
        &mut |p| {
            let bytes_read = p.reads * k3_store::diskbench::EXPERT_BLOCK_BYTES as u64;
            emit(SetupEvent::SpeedTest {
                depth: p.depth as u32,
                bytes_read,
                mb_per_s: p.mb_per_s,
                fraction: p.fraction(),
            });
        },
        &cancel,
    )
    .map_err(|e| io(&e))?;
    let pass = |depth: usize| report.at_depth(depth).cloned();
    let (q1, q16) = (pass(1).ok_or_else(|| io(&"no depth-1 pass"))?, pass(16).ok_or_else(|| io(&"no depth-16 pass"))?);
    emit(SetupEvent::SpeedTest { depth: 0, bytes_read: 0, mb_per_s: 0.0, fraction: 1.0 });
    let read_pattern = best_pattern(scratch.path(), scratch_bytes()).map_err(|e| io(&e))?;
    Ok(SpeedSummary {
        qd1_mb_per_s: q1.mb_per_s,
        qd16_mb_per_s: q16.mb_per_s,
        qd1_experts_per_s: q1.experts_per_s,
        qd16_experts_per_s: q16.experts_per_s,
        direct: report.direct,
        read_pattern,
    })
}

/// The drive's best read pattern on the scratch file: the benchmarks' floor grid (8 and 32
/// MiB × 8 and 32 in flight, random and sequential), at most 128 MB a point, so the engine
/// reads the way this drive wants (issue 12). `None` when the file is too small to sweep.
fn best_pattern(file: &std::path::Path, file_bytes: u64) -> k3_engine::Result<Option<PatternSummary>> {
    use k3_store::diskbench::{floor_grid, sweep, SweepRequest};
    let req =
        SweepRequest { files: vec![file.to_path_buf()], bytes_per_point: file_bytes.min(128_000_000), ..floor_grid() };
    Ok(sweep(&req)?.best().map(|p| PatternSummary {
        request_bytes: p.request_bytes as u32,
        depth: p.depth as u32,
        mb_per_s: p.gbps * 1000.0,
    }))
}

/// The speed test's scratch file: 2 GiB, or `K3APP_SPEED_SCRATCH_MB` (tests use less).
fn scratch_bytes() -> u64 {
    std::env::var("K3APP_SPEED_SCRATCH_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|m| (64..=65536).contains(m))
        .map_or(2 << 30, |m| m << 20)
}
