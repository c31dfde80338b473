//! The drive's bandwidth `k3 forecast` forecasts with: `--disk-gbps`, measured under
//! `--disk` (a short sweep, then trunk-layer and expert windows through the engine's
//! reader), or a conservative stated default.

use std::path::{Path, PathBuf};

use k3_io::ReadPattern;
use k3_plan::{DiskRates, Footprint};
use k3_store::{best_over, floor_grid, measure_windows, DiskPoint, Order, ScratchFile, WindowRequest, WindowResult};

use super::{input_error, require_dir, runtime_error, Failure};
use crate::args::ForecastArgs;

/// Used when neither --disk-gbps nor --disk is given: below what NVMe drives read in
/// 17.5 MB random requests (the published runs had 3.2 and 4.6 GB/s), above a SATA SSD.
pub const DEFAULT_DISK_GBPS: f64 = 1.0;
/// Bytes each point of the bandwidth sweep reads (8 points).
const SWEEP_BYTES_PER_POINT: u64 = 128_000_000;
/// Bytes of trunk-layer windows read one after another, and of expert windows.
const TRUNK_READ_BYTES: u64 = 2_000_000_000;
const EXPERT_READ_BYTES: u64 = 500_000_000;
/// Largest trunk window read (a K3 layer is 0.84–2.34 GB; the buffer is allocated).
const MAX_TRUNK_WINDOW: u64 = 1 << 30;
/// Files smaller than two of the sweep's largest requests (32 MiB) are skipped by it.
const SWEEP_MIN_FILE_BYTES: u64 = 64 << 20;
/// Scratch file written when the --disk folder holds no large file.
const SCRATCH_BYTES: u64 = 1_000_000_000;
/// How deep --disk is searched for large files.
const SEARCH_DEPTH: usize = 3;

/// Where the bandwidth came from.
pub enum DiskSource {
    Flag,
    Measured { best: DiskPoint, trunk: WindowResult, experts: WindowResult, files: Vec<PathBuf>, scratch: bool },
    Default,
}

/// The bandwidth, GB/s, for trunk-layer reads and for expert reads.
pub struct Disk {
    pub trunk_gbps: f64,
    pub expert_gbps: f64,
    pub source: DiskSource,
}

impl Disk {
    fn same(gbps: f64, source: DiskSource) -> Self {
        Disk { trunk_gbps: gbps, expert_gbps: gbps, source }
    }

    pub fn rates(&self) -> DiskRates {
        DiskRates { trunk_bytes_per_second: self.trunk_gbps * 1e9, expert_bytes_per_second: self.expert_gbps * 1e9 }
    }
}

/// The slowest and fastest drive a forecast is made for (1 MB/s, 1 TB/s).
const MIN_DISK_GBPS: f64 = 0.001;
const MAX_DISK_GBPS: f64 = 1000.0;

/// The bandwidth --disk-gbps gives, --disk measures, or the stated default.
pub fn disk(args: &ForecastArgs, fp: &Footprint) -> Result<Disk, Failure> {
    if let Some(gbps) = args.disk_gbps {
        // Probe finding: near-zero rates gave infinite or 1e30 s/token forecasts.
        if !(gbps.is_finite() && (MIN_DISK_GBPS..=MAX_DISK_GBPS).contains(&gbps)) {
            return Err(input_error(format!(
                "--disk-gbps {gbps}: give {MIN_DISK_GBPS} to {MAX_DISK_GBPS} GB/s (1 MB/s to 1 TB/s)"
            )));
        }
        return Ok(Disk::same(gbps, DiskSource::Flag));
    }
    match &args.disk {
        Some(path) => measure_disk(path, fp),
        None => Ok(Disk::same(DEFAULT_DISK_GBPS, DiskSource::Default)),
    }
}

/// The sweep's best point (reported beside), then trunk-layer windows one after another
/// and expert windows at random offsets through the engine's reader.
fn measure_disk(path: &Path, fp: &Footprint) -> Result<Disk, Failure> {
    let (files, scratch) = disk_files(path)?;
    let grid = k3_store::SweepRequest { bytes_per_point: SWEEP_BYTES_PER_POINT, ..floor_grid() };
    let (best, _) = best_over(std::slice::from_ref(&files), &grid)?;
    let largest = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).max().unwrap_or(0);
    let layer = fp.layer_trunk_bytes.iter().copied().max().unwrap_or(0);
    let window = layer.min(MAX_TRUNK_WINDOW).min(largest).max(1) as usize;
    let windows = |window_bytes, order, bytes| {
        let req = WindowRequest { files: files.clone(), window_bytes, order, bytes, pattern: ReadPattern::DEFAULT };
        measure_windows(&req)
    };
    let trunk = windows(window, Order::Sequential, TRUNK_READ_BYTES)?;
    let experts = windows(fp.expert_bytes.max(1) as usize, Order::Random, EXPERT_READ_BYTES)?;
    let used_scratch = scratch.is_some();
    drop(scratch); // removes the scratch file
    let (Some(best), Some(trunk), Some(experts)) = (best, trunk, experts) else {
        return Err(runtime_error(format!("--disk {}: no file large enough to measure", path.display())));
    };
    let (trunk_gbps, expert_gbps) = (trunk.gbps, experts.gbps);
    let source = DiskSource::Measured { best, trunk, experts, files, scratch: used_scratch };
    Ok(Disk { trunk_gbps, expert_gbps, source })
}

/// The large files under `path` (or `path` itself), else a scratch file written there.
fn disk_files(path: &Path) -> Result<(Vec<PathBuf>, Option<ScratchFile>), Failure> {
    if path.is_file() {
        return Ok((vec![path.to_path_buf()], None));
    }
    require_dir("--disk", path)?;
    let mut files = Vec::new();
    large_files(path, SEARCH_DEPTH, &mut files);
    files.sort();
    if !files.is_empty() {
        return Ok((files, None));
    }
    let scratch = ScratchFile::create(path, SCRATCH_BYTES, &std::sync::atomic::AtomicBool::new(false))
        .map_err(|e| runtime_error(format!("--disk {}: writing a scratch file: {e}", path.display())))?;
    Ok((vec![scratch.path().to_path_buf()], Some(scratch)))
}

fn large_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.metadata() {
            Ok(m) if m.is_file() && m.len() >= SWEEP_MIN_FILE_BYTES => out.push(path),
            Ok(m) if m.is_dir() && depth > 0 => large_files(&path, depth - 1, out),
            _ => {}
        }
    }
}
