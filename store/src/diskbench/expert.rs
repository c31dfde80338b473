//! `k3 bench disk`: the drive read the way the engine reads experts — O_DIRECT, one expert
//! (17,547,264 bytes) per read at a random 4096-aligned offset, at queue depth 1 and 16.
//!
//! Owns: [`measure_expert_reads`] (one pass per depth of about `seconds_per_pass`:
//! `depth` threads, each issuing blocking `pread`s of one block into its own aligned buffer,
//! so `depth` requests are in flight; every read's latency recorded; MB/s = bytes ÷ the
//! pass's wall clock, MB = 10^6), the progress it reports (≤ 10 Hz, from the calling
//! thread, so a UI callback need not be `Send`) and its cancel flag (checked between reads).
//! Must not: report page-cache speed. Files on a RAM file system are refused. Where the file
//! system refuses O_DIRECT, reads are buffered and the report says `direct: false`; every
//! file's cached pages are then dropped (`POSIX_FADV_DONTNEED`) before each pass, and the
//! engine's reader drops each read's pages after it, so bytes come from the drive — the
//! reads the engine itself would make on that file system — but are labelled as such.
//! Easy to break: offsets are drawn over all files weighted by their length, so a short file
//! is not over-read; a file shorter than one block is skipped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k3_io::{Blob, DirectFile};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::cache::{drop_cached, ram_file_system};
use super::latency::{percentile, sorted};
use super::DiskBenchError;

/// Bytes of one routed expert of the released checkpoint (spec §6.6; 4,284 × 4096).
pub const EXPERT_BLOCK_BYTES: usize = 17_547_264;

/// The queue depths measured: one read at a time, and 16 in flight.
pub const EXPERT_DEPTHS: [usize; 2] = [1, 16];

/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpertReadRequest {
    /// Files read (read-only): shards, or a scratch file.
    pub files: Vec<PathBuf>,
    /// Bytes per read (a positive multiple of 4096).
    pub block_bytes: usize,
    /// One pass per depth, in this order.
    pub depths: Vec<usize>,
    /// Seconds each pass issues reads for.
    pub seconds_per_pass: f64,
    /// Seed of the random offsets.
    pub seed: u64,
}

impl ExpertReadRequest {
    /// One-expert reads at depth 1 and 16 over `files`, `seconds_per_pass` each.
    pub fn new(files: Vec<PathBuf>, seconds_per_pass: f64) -> Self {
        ExpertReadRequest {
            files,
            block_bytes: EXPERT_BLOCK_BYTES,
            depths: EXPERT_DEPTHS.to_vec(),
            seconds_per_pass,
            seed: 0x6b33,
        }
    }

    fn validate(&self) -> Result<(), DiskBenchError> {
        if self.block_bytes == 0 || !self.block_bytes.is_multiple_of(4096) {
            return Err(DiskBenchError::BadRequest(format!(
                "read size {} is not a positive multiple of 4096",
                self.block_bytes
            )));
        }
        if self.depths.is_empty() || self.depths.iter().any(|&d| d == 0 || d > 256) {
            return Err(DiskBenchError::BadRequest(format!("queue depths {:?}: each 1–256", self.depths)));
        }
        if !(self.seconds_per_pass.is_finite() && self.seconds_per_pass > 0.0) {
            return Err(DiskBenchError::BadRequest(format!("{} s per pass is not positive", self.seconds_per_pass)));
        }
        Ok(())
    }
}

/// Where a measurement is, for a live bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertReadProgress {
    /// Index of the pass running (into the request's depths).
    pub pass: usize,
    pub passes: usize,
    pub depth: usize,
    /// Seconds into this pass, and its length.
    pub elapsed_seconds: f64,
    pub pass_seconds: f64,
    /// Reads completed in this pass so far, and their MB/s.
    pub reads: u64,
    pub mb_per_s: f64,
}

impl ExpertReadProgress {
    /// Fraction of the whole measurement done, 0–1.
    pub fn fraction(&self) -> f64 {
        let within = (self.elapsed_seconds / self.pass_seconds).clamp(0.0, 1.0);
        ((self.pass as f64 + within) / self.passes.max(1) as f64).min(1.0)
    }
}

/// The figures of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PassFigures {
    pub depth: usize,
    /// Bytes read ÷ wall clock, MB = 10^6.
    pub mb_per_s: f64,
    /// Reads completed per second (× block bytes = MB/s × 10^6).
    pub experts_per_s: f64,
    /// Median and 99th percentile of one read's latency (at depth 16: each request's).
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub reads: u64,
    pub seconds: f64,
}

/// The result of [`measure_expert_reads`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpertReadReport {
    /// One per depth, in the request's order.
    pub passes: Vec<PassFigures>,
    pub block_bytes: usize,
    /// False when a file system refused O_DIRECT (buffered reads, pages dropped; see the module).
    pub direct: bool,
    pub files: Vec<PathBuf>,
}

impl ExpertReadReport {
    /// The pass at queue depth `depth`.
    pub fn at_depth(&self, depth: usize) -> Option<&PassFigures> {
        self.passes.iter().find(|p| p.depth == depth)
    }
}

/// Measures `req`: one pass per depth, reporting progress and stopping (with
/// [`DiskBenchError::Cancelled`]) once `cancel` is raised.
pub fn measure_expert_reads(
    req: &ExpertReadRequest,
    progress: &mut dyn FnMut(ExpertReadProgress),
    cancel: &AtomicBool,
) -> Result<ExpertReadReport, DiskBenchError> {
    req.validate()?;
    let targets = Targets::open(&req.files, req.block_bytes)?;
    let mut passes = Vec::with_capacity(req.depths.len());
    for (pass, &depth) in req.depths.iter().enumerate() {
        if !targets.direct {
            targets.drop_cached()?;
        }
        let at = PassAt { pass, passes: req.depths.len(), depth };
        passes.push(run_pass(&targets, req, at, progress, cancel)?);
    }
    Ok(ExpertReadReport { passes, block_bytes: req.block_bytes, direct: targets.direct, files: targets.paths() })
}

/// The files read, with the aligned offsets each offers.
struct Targets {
    files: Vec<(DirectFile, u64)>,
    /// Cumulative count of block-start slots (4096 apart), one entry per file.
    slots_until: Vec<u64>,
    direct: bool,
}

impl Targets {
    fn open(paths: &[PathBuf], block: usize) -> Result<Targets, DiskBenchError> {
        if paths.is_empty() {
            return Err(DiskBenchError::NoFiles);
        }
        let (mut files, mut slots_until, mut largest) = (Vec::new(), Vec::new(), 0u64);
        for path in paths {
            if let Some(fs) = ram_file_system(path) {
                return Err(DiskBenchError::RamFileSystem { path: path.clone(), fs });
            }
            let len = std::fs::metadata(path).map_err(|e| DiskBenchError::io(path, e))?.len();
            largest = largest.max(len);
            if len < block as u64 {
                continue;
            }
            let slots = (len - block as u64) / 4096 + 1;
            slots_until.push(slots_until.last().copied().unwrap_or(0) + slots);
            files.push((DirectFile::open(path)?, len));
        }
        if files.is_empty() {
            return Err(DiskBenchError::FilesTooSmall { block_bytes: block, largest_bytes: largest });
        }
        let direct = files.iter().all(|(f, _)| f.is_direct());
        Ok(Targets { files, slots_until, direct })
    }

    fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|(f, _)| f.path().to_path_buf()).collect()
    }

    fn drop_cached(&self) -> Result<(), DiskBenchError> {
        self.files.iter().try_for_each(|(f, _)| drop_cached(f.path()))
    }

    /// A random block: (file, aligned offset).
    fn pick(&self, rng: &mut ChaCha8Rng) -> (&DirectFile, u64) {
        let total = self.slots_until.last().copied().unwrap_or(1);
        let slot = rng.random_range(0..total);
        let i = self.slots_until.partition_point(|&end| end <= slot);
        let before = if i == 0 { 0 } else { self.slots_until[i - 1] };
        (&self.files[i].0, (slot - before) * 4096)
    }
}

/// Which pass is running.
#[derive(Debug, Clone, Copy)]
struct PassAt {
    pass: usize,
    passes: usize,
    depth: usize,
}

/// What one reader thread did: its latencies (ms) and when its last read ended.
struct ThreadRun {
    latencies_ms: Vec<f64>,
    ended: Instant,
}

/// One pass: `depth` reader threads until the pass's time is up, progress from this thread.
fn run_pass(
    targets: &Targets,
    req: &ExpertReadRequest,
    at: PassAt,
    progress: &mut dyn FnMut(ExpertReadProgress),
    cancel: &AtomicBool,
) -> Result<PassFigures, DiskBenchError> {
    let reads = AtomicU64::new(0);
    let start = Instant::now();
    let pass_time = Duration::from_secs_f64(req.seconds_per_pass);
    let runs: Vec<Result<ThreadRun, DiskBenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..at.depth)
            .map(|t| {
                let seed = req.seed ^ ((at.depth as u64) << 32) ^ t as u64;
                let reads = &reads;
                s.spawn(move || read_until(targets, req.block_bytes, seed, start + pass_time, reads, cancel))
            })
            .collect();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(PROGRESS_EVERY);
            progress(snapshot(at, start, req, reads.load(Ordering::Relaxed)));
        }
        // A reader that panicked is a bug to see, never a pass of 0 reads.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    if cancel.load(Ordering::Relaxed) {
        return Err(DiskBenchError::Cancelled);
    }
    let runs = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(figures(at.depth, req.block_bytes, start, runs))
}

/// The progress of a pass `reads` reads in.
fn snapshot(at: PassAt, start: Instant, req: &ExpertReadRequest, reads: u64) -> ExpertReadProgress {
    let elapsed = start.elapsed().as_secs_f64();
    ExpertReadProgress {
        pass: at.pass,
        passes: at.passes,
        depth: at.depth,
        elapsed_seconds: elapsed,
        pass_seconds: req.seconds_per_pass,
        reads,
        mb_per_s: reads as f64 * req.block_bytes as f64 / elapsed.max(1e-9) / 1e6,
    }
}

/// One reader thread: blocking reads of one block at random offsets, at least one, until
/// `deadline` or a cancel.
fn read_until(
    targets: &Targets,
    block: usize,
    seed: u64,
    deadline: Instant,
    reads: &AtomicU64,
    cancel: &AtomicBool,
) -> Result<ThreadRun, DiskBenchError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = Blob::zeroed(block);
    let mut latencies_ms = Vec::new();
    loop {
        let (file, offset) = targets.pick(&mut rng);
        let t0 = Instant::now();
        file.read_range(buf.pages_mut(), offset, block)?;
        let ended = Instant::now();
        latencies_ms.push((ended - t0).as_secs_f64() * 1e3);
        reads.fetch_add(1, Ordering::Relaxed);
        if ended >= deadline || cancel.load(Ordering::Relaxed) {
            return Ok(ThreadRun { latencies_ms, ended });
        }
    }
}

/// A pass's figures from its threads' runs.
fn figures(depth: usize, block: usize, start: Instant, runs: Vec<ThreadRun>) -> PassFigures {
    let ended = runs.iter().map(|r| r.ended).max().unwrap_or(start);
    let seconds = (ended - start).as_secs_f64().max(1e-9);
    let latencies = sorted(runs.into_iter().flat_map(|r| r.latencies_ms).collect());
    let reads = latencies.len() as u64;
    let experts_per_s = reads as f64 / seconds;
    PassFigures {
        depth,
        mb_per_s: experts_per_s * block as f64 / 1e6,
        experts_per_s,
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
        reads,
        seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskbench::{drive_tempdir, ScratchFile, MIB};
    use std::path::Path;

    fn request(files: Vec<PathBuf>) -> ExpertReadRequest {
        ExpertReadRequest {
            block_bytes: MIB,
            depths: vec![1, 4],
            seconds_per_pass: 0.2,
            ..ExpertReadRequest::new(files, 0.2)
        }
    }

    #[test]
    fn each_depth_gets_a_pass_with_consistent_figures_and_progress() {
        let dir = drive_tempdir();
        let never = AtomicBool::new(false);
        let scratch = ScratchFile::create(dir.path(), 8 * MIB as u64, &never).unwrap();
        let mut seen = Vec::new();
        let report =
            measure_expert_reads(&request(vec![scratch.path().into()]), &mut |p| seen.push(p), &never).unwrap();
        assert_eq!(report.passes.iter().map(|p| p.depth).collect::<Vec<_>>(), vec![1, 4]);
        for p in &report.passes {
            assert!(p.reads >= p.depth as u64 && p.seconds >= 0.2, "{p:?}");
            assert!(0.0 < p.p50_ms && p.p50_ms <= p.p99_ms, "{p:?}");
            let from_reads = p.experts_per_s * MIB as f64 / 1e6;
            assert!((from_reads - p.mb_per_s).abs() < 1e-9 * p.mb_per_s, "{p:?}");
        }
        assert!(seen.iter().any(|p| p.pass == 1 && p.depth == 4), "progress covers the second pass");
        assert!(seen.iter().all(|p| (0.0..=1.0).contains(&p.fraction())));
        assert!(seen.windows(2).all(|w| w[0].fraction() <= w[1].fraction()), "the bar never goes back");
    }

    #[test]
    fn offsets_are_aligned_and_cover_every_file_by_length() {
        let dir = drive_tempdir();
        let never = AtomicBool::new(false);
        let a = ScratchFile::create(dir.path(), 4 * MIB as u64, &never).unwrap();
        let b = ScratchFile::create(dir.path(), MIB as u64, &never).unwrap();
        let tiny = dir.path().join("tiny");
        std::fs::write(&tiny, [0u8; 100]).unwrap();
        let t = Targets::open(&[a.path().into(), b.path().into(), tiny], MIB).unwrap();
        assert_eq!(t.files.len(), 2, "a file shorter than one read is skipped");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut hits = [0u32; 2];
        for _ in 0..4000 {
            let (file, offset) = t.pick(&mut rng);
            let i = usize::from(file.path() == b.path());
            let len = t.files[i].1;
            assert!(offset.is_multiple_of(4096) && offset + MIB as u64 <= len, "{offset}");
            hits[i] += 1;
        }
        // 769 slots in the 4 MiB file, 1 in the 1 MiB one.
        assert!(hits[1] > 0 && hits[1] < 40, "{hits:?}");
    }

    #[test]
    fn refusals_name_their_reason() {
        let never = AtomicBool::new(false);
        let mut none = |_| {};
        let err = measure_expert_reads(&request(vec![]), &mut none, &never).err();
        assert!(matches!(err, Some(DiskBenchError::NoFiles)), "{err:?}");
        let dir = drive_tempdir();
        let small = dir.path().join("small");
        std::fs::write(&small, vec![0u8; 8192]).unwrap();
        let err = measure_expert_reads(&request(vec![small.clone()]), &mut none, &never).err();
        assert!(matches!(err, Some(DiskBenchError::FilesTooSmall { largest_bytes: 8192, .. })), "{err:?}");
        let odd = ExpertReadRequest { block_bytes: 5000, ..request(vec![small]) };
        assert!(matches!(measure_expert_reads(&odd, &mut none, &never), Err(DiskBenchError::BadRequest(_))));
        let shm = Path::new("/dev/shm");
        if ram_file_system(shm).is_some() {
            let f = tempfile::NamedTempFile::new_in(shm).unwrap();
            std::fs::write(f.path(), vec![0u8; 2 * MIB]).unwrap();
            let err = measure_expert_reads(&request(vec![f.path().into()]), &mut none, &never).err();
            assert!(matches!(err, Some(DiskBenchError::RamFileSystem { fs: "tmpfs", .. })), "{err:?}");
        }
    }

    #[test]
    fn a_raised_cancel_flag_stops_the_measurement() {
        let dir = drive_tempdir();
        let never = AtomicBool::new(false);
        let scratch = ScratchFile::create(dir.path(), 4 * MIB as u64, &never).unwrap();
        let cancel = AtomicBool::new(false);
        let long = ExpertReadRequest { seconds_per_pass: 60.0, ..request(vec![scratch.path().into()]) };
        let started = Instant::now();
        let err = measure_expert_reads(&long, &mut |_| cancel.store(true, Ordering::Relaxed), &cancel).err();
        assert!(matches!(err, Some(DiskBenchError::Cancelled)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "stopped long before the pass's 60 s");
    }
}
