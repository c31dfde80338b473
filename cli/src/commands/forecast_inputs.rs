//! What `k3 forecast` forecasts from: the footprint (the released K3 from the catalogue,
//! or a checkpoint's headers), the drive's bandwidth (given, measured or a stated default)
//! and this CPU's kernel rates (measured).

use std::path::{Path, PathBuf};
use std::time::Duration;

use k3_engine::bench::decode_rates::{measure_decode_rates, DecodeRates};
use k3_engine::format::TensorIndex;
use k3_engine::stream::footprint::footprint;
use k3_engine::ModelConfig;
use k3_plan::{released_footprint, Footprint};
use k3_store::{best_over, floor_grid, DiskPoint, ScratchFile};

use super::{input_error, require_dir, runtime_error, Failure};
use crate::args::ForecastArgs;

/// Used when neither --disk-gbps nor --disk is given: below what NVMe drives read in
/// 17.5 MB random requests (the published runs had 3.2 and 4.6 GB/s), above a SATA SSD.
pub const DEFAULT_DISK_GBPS: f64 = 1.0;
/// Bytes each point of the bandwidth sweep reads (8 points).
const SWEEP_BYTES_PER_POINT: u64 = 256_000_000;
/// Files smaller than two of the sweep's largest requests (32 MiB) are skipped by it.
const SWEEP_MIN_FILE_BYTES: u64 = 64 << 20;
/// Scratch file written when the --disk folder holds no large file.
const SCRATCH_BYTES: u64 = 1_000_000_000;
/// How deep --disk is searched for large files.
const SEARCH_DEPTH: usize = 3;
/// Clock time of the kernel measurement (the weights' setup comes on top).
const KERNEL_BUDGET: Duration = Duration::from_millis(1200);

/// The model forecast.
pub struct Subject {
    pub footprint: Footprint,
    /// `None` for the released model.
    pub model_dir: Option<PathBuf>,
    pub trunk_streamed: bool,
}

/// The released K3, or the checkpoint in --model with its packed trunk when given.
pub fn subject(args: &ForecastArgs) -> Result<Subject, Failure> {
    let Some(dir) = &args.model else {
        return Ok(Subject { footprint: released_footprint(), model_dir: None, trunk_streamed: true });
    };
    require_dir("--model", dir)?;
    let cfg = ModelConfig::load(&dir.join("config.json"))?;
    let index = TensorIndex::open(dir)?;
    k3_engine::model::Model::validate(&cfg, &index)?;
    if let Some(trunk) = &args.trunk {
        require_dir("--trunk", trunk)?;
        k3_engine::stream::trunk_manifest::open_packed_trunk(trunk, &cfg, &index)?;
    }
    Ok(Subject {
        footprint: footprint(&cfg, &index)?,
        model_dir: Some(dir.clone()),
        trunk_streamed: args.trunk.is_some(),
    })
}

/// Where the bandwidth came from.
pub enum DiskSource {
    Flag,
    Measured { best: DiskPoint, direct: bool, files: Vec<PathBuf>, scratch: bool },
    Default,
}

pub struct Disk {
    pub gbps: f64,
    pub source: DiskSource,
}

/// The bandwidth --disk-gbps gives, --disk measures, or the stated default.
pub fn disk(args: &ForecastArgs) -> Result<Disk, Failure> {
    if let Some(gbps) = args.disk_gbps {
        if !(gbps.is_finite() && gbps > 0.0) {
            return Err(input_error(format!("--disk-gbps {gbps}: give a positive number of GB/s")));
        }
        return Ok(Disk { gbps, source: DiskSource::Flag });
    }
    match &args.disk {
        Some(path) => measure_disk(path),
        None => Ok(Disk { gbps: DEFAULT_DISK_GBPS, source: DiskSource::Default }),
    }
}

fn measure_disk(path: &Path) -> Result<Disk, Failure> {
    let (files, scratch) = disk_files(path)?;
    let grid = k3_store::SweepRequest { bytes_per_point: SWEEP_BYTES_PER_POINT, ..floor_grid() };
    let (best, direct) = best_over(std::slice::from_ref(&files), &grid)?;
    let used_scratch = scratch.is_some();
    drop(scratch); // removes the scratch file
    let Some(best) = best else {
        return Err(runtime_error(format!("--disk {}: the sweep measured no point", path.display())));
    };
    Ok(Disk { gbps: best.gbps, source: DiskSource::Measured { best, direct, files, scratch: used_scratch } })
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
    let scratch = ScratchFile::create(path, SCRATCH_BYTES)
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

/// The kernel rates on `threads` threads (default: every core).
pub fn compute(args: &ForecastArgs) -> Result<DecodeRates, Failure> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = args.threads.unwrap_or(cores);
    if threads == 0 {
        return Err(input_error("--threads 0: give at least 1".into()));
    }
    Ok(measure_decode_rates(threads, KERNEL_BUDGET)?)
}
