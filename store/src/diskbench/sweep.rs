//! The drive's best read pattern, measured (`k3 bench disk --sweep`): request size ×
//! requests in flight, O_DIRECT, random aligned offsets, on the model's shards or a scratch
//! file on the same drive.
//!
//! Owns: [`sweep`] (one point per access × size × depth: `depth` threads each reading
//! `request_bytes` into one reused aligned buffer, at random 4096-aligned offsets or
//! walking one stretch of a file together as the engine's pieces do, until the point's
//! byte budget is read; GB/s = bytes ÷ wall clock; the best point of either access is the
//! floor every benchmark divides by) and [`SavedPattern`], the JSON `--save` writes and
//! `--read-pattern` reads.
//! Must not: measure the page cache: reads are O_DIRECT (a file system that refuses it is
//! reported as `direct: false`, and its figures are not a drive's).
//! Easy to break: a point must read enough bytes to leave the drive's burst behaviour
//! behind (at least 256 MB by default), and files smaller than two requests are skipped.

use std::path::PathBuf;
use std::time::Instant;

use k3_io::{Blob, DirectFile, ReadPattern};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::MIB;

/// Where the requests of one point go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Each request at a random aligned offset (expert reads).
    Random,
    /// Consecutive requests through a file, `depth` of them in flight (a trunk layer or a
    /// large expert run read in pieces, as the engine reads).
    Sequential,
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    pub files: Vec<PathBuf>,
    pub accesses: Vec<Access>,
    /// Request sizes (multiples of 4096).
    pub sizes: Vec<usize>,
    /// Requests in flight.
    pub depths: Vec<usize>,
    /// Bytes each point reads in all.
    pub bytes_per_point: u64,
}

impl SweepRequest {
    /// 1–64 MiB × 1–32 in flight over `files`.
    pub fn full(files: Vec<PathBuf>, bytes_per_point: u64) -> Self {
        SweepRequest {
            files,
            accesses: vec![Access::Random, Access::Sequential],
            sizes: [1, 2, 4, 8, 16, 32, 64].iter().map(|m| m * MIB).collect(),
            depths: vec![1, 2, 4, 8, 16, 32],
            bytes_per_point,
        }
    }
}

/// One measured point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiskPoint {
    pub access: Access,
    pub request_bytes: usize,
    pub depth: usize,
    pub gbps: f64,
    pub bytes_read: u64,
    pub seconds: f64,
}

/// The sweep's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskSweep {
    pub points: Vec<DiskPoint>,
    /// False when the file system refused O_DIRECT (buffered reads: not the drive's figure).
    pub direct: bool,
    pub files: Vec<PathBuf>,
}

impl DiskSweep {
    /// The fastest point.
    pub fn best(&self) -> Option<DiskPoint> {
        self.points.iter().copied().max_by(|a, b| a.gbps.total_cmp(&b.gbps))
    }
}

/// What `k3 bench disk --save` writes and the engine's `--read-pattern` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedPattern {
    pub request_bytes: usize,
    pub depth: usize,
    /// The bandwidth measured at that point.
    pub gbps: f64,
    pub direct: bool,
    pub measured_on: Vec<PathBuf>,
}

impl SavedPattern {
    pub fn pattern(&self) -> ReadPattern {
        ReadPattern { request_bytes: self.request_bytes, depth: self.depth }
    }
}

/// Measures every size × depth of `req`.
pub fn sweep(req: &SweepRequest) -> k3_io::Result<DiskSweep> {
    let files: Vec<(DirectFile, u64)> = req
        .files
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| (p, m.len())))
        .map(|(p, len)| DirectFile::open(p).map(|f| (f, len)))
        .collect::<k3_io::Result<_>>()?;
    let direct = files.iter().all(|(f, _)| f.is_direct());
    let mut points = Vec::new();
    for &size in &req.sizes {
        let usable: Vec<&(DirectFile, u64)> = files.iter().filter(|(_, len)| *len >= 2 * size as u64).collect();
        if usable.is_empty() {
            continue;
        }
        for &access in &req.accesses {
            for &depth in &req.depths {
                points.push(measure(&usable, Point { access, size, depth }, req.bytes_per_point)?);
            }
        }
    }
    Ok(DiskSweep { points, direct, files: req.files.clone() })
}

/// One point of the sweep.
#[derive(Debug, Clone, Copy)]
struct Point {
    access: Access,
    size: usize,
    depth: usize,
}

/// One point: `depth` threads of `size`-byte reads until `budget` bytes are read. Random:
/// each thread picks offsets at random. Sequential: the threads walk one file together,
/// thread `t` reading requests `t, t + depth, …` of a stretch that starts at a random
/// offset (the engine's pieces of one window), moving to another stretch at its end.
fn measure(files: &[&(DirectFile, u64)], point: Point, budget: u64) -> k3_io::Result<DiskPoint> {
    let Point { access, size, depth } = point;
    let per_thread = (budget / depth as u64 / size as u64).max(1);
    let stretch = (size * depth) as u64;
    let start = Instant::now();
    let read: Vec<k3_io::Result<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..depth)
            .map(|t| {
                s.spawn(move || {
                    // Sequential threads share a seed: they walk the same stretches.
                    let seed = match access {
                        Access::Random => (size as u64) << 8 | t as u64,
                        Access::Sequential => (size as u64) << 8,
                    };
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    let mut buf = Blob::zeroed(size);
                    let mut bytes = 0u64;
                    for _ in 0..per_thread {
                        let (file, len) = files[rng.random_range(0..files.len())];
                        let offset = match access {
                            Access::Random => rng.random_range(0..(len - size as u64) / 4096) * 4096,
                            Access::Sequential => {
                                let stretches = (len.saturating_sub(stretch) / 4096).max(1);
                                let base = rng.random_range(0..stretches) * 4096;
                                (base + (t * size) as u64).min(len - size as u64) / 4096 * 4096
                            }
                        };
                        file.read_range(buf.pages_mut(), offset, size)?;
                        bytes += size as u64;
                    }
                    Ok(bytes)
                })
            })
            .collect();
        // A reader that panicked is a bug to see, never a point of 0 bytes.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let bytes_read: u64 = read.into_iter().collect::<k3_io::Result<Vec<_>>>()?.iter().sum();
    Ok(DiskPoint { access, request_bytes: size, depth, gbps: bytes_read as f64 / seconds / 1e9, bytes_read, seconds })
}

/// The best point over groups of files, each group swept with `grid`'s sizes, depths and
/// accesses on its own (shards and trunk.bin differ: a file read every token may be
/// served faster); `direct` is false when any file refused O_DIRECT.
pub fn best_over(groups: &[Vec<PathBuf>], grid: &SweepRequest) -> k3_io::Result<(Option<DiskPoint>, bool)> {
    let mut best: Option<DiskPoint> = None;
    let mut direct = true;
    for files in groups.iter().filter(|g| !g.is_empty()) {
        let drive = sweep(&SweepRequest { files: files.clone(), ..grid.clone() })?;
        direct &= drive.direct;
        best = [best, drive.best()].into_iter().flatten().max_by(|a, b| a.gbps.total_cmp(&b.gbps));
    }
    Ok((best, direct))
}

/// The grid benchmarks measure their floor with: 8 and 32 MiB × 8 and 32 in flight,
/// random and sequential, 1 GB a point.
pub fn floor_grid() -> SweepRequest {
    SweepRequest {
        files: Vec::new(),
        accesses: vec![Access::Random, Access::Sequential],
        sizes: vec![8 * MIB, 32 * MIB],
        depths: vec![8, 32],
        bytes_per_point: 1_000_000_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskbench::ScratchFile;

    #[test]
    fn a_sweep_measures_every_point_and_names_the_best() {
        let dir = tempfile::tempdir().unwrap();
        let scratch =
            ScratchFile::create(dir.path(), 8 * MIB as u64, &std::sync::atomic::AtomicBool::new(false)).unwrap();
        let req = SweepRequest {
            files: vec![scratch.path().to_path_buf()],
            accesses: vec![Access::Random, Access::Sequential],
            sizes: vec![MIB, 2 * MIB, 8 * MIB],
            depths: vec![1, 2],
            bytes_per_point: 4 * MIB as u64,
        };
        let s = sweep(&req).unwrap();
        // 8 MiB requests need a file of at least two requests: skipped on an 8 MiB file.
        assert_eq!(s.points.len(), 8, "{:?}", s.points);
        assert!(s.points.iter().all(|p| p.gbps > 0.0 && p.bytes_read >= MIB as u64));
        let best = s.best().unwrap();
        assert!(s.points.iter().all(|p| p.gbps <= best.gbps));
        let path = scratch.path().to_path_buf();
        drop(scratch);
        assert!(!path.exists(), "the scratch file is removed");
    }
}
