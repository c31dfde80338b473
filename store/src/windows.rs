//! The drive read as the engine reads it: whole windows through `k3_io::Reader`
//! (its reader threads, pieces, queue and CRC), either one after another through a file,
//! as a streamed trunk reads its layers, or at random offsets, as the expert cache reads
//! experts.
//!
//! Owns: [`measure_windows`]: windows of `window_bytes` until `bytes` are read; GB/s =
//! bytes ÷ wall clock.
//! Must not: stand in for a benchmark's floor (that is the best point of the sweep,
//! [`crate::best_over`], never the engine's own read pattern); this is an input to the
//! speed forecast, which predicts the engine's reads and so measures them as it makes them.
//! Why it exists: on the shared virtio drive of our benchmarks, the engine read layer
//! windows at 2.2 GB/s where every sweep point (random, or sequential 64 MiB–1 GiB
//! stretches) and fio 8 MiB × 8 measured 1.1–1.7 GB/s; expert-sized windows at random
//! offsets read at 1.2 GB/s, like the sweep.

use std::path::PathBuf;
use std::time::Instant;

use k3_io::{Blob, Checksum, DirectFile, ReadPattern, Reader, Urgency};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Where the windows go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Back to back from the start of each file in turn (a streamed trunk's layers).
    Sequential,
    /// At random offsets of random files (routed experts).
    Random,
}

/// What to read.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowRequest {
    pub files: Vec<PathBuf>,
    pub window_bytes: usize,
    pub order: Order,
    /// Bytes to read in all (at least one window).
    pub bytes: u64,
    pub pattern: ReadPattern,
}

/// What was measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowResult {
    pub order: Order,
    pub window_bytes: usize,
    pub bytes_read: u64,
    pub seconds: f64,
    pub gbps: f64,
    /// False when a file system refused O_DIRECT.
    pub direct: bool,
}

/// Reads windows of `req` through the engine's reader; `None` when no file holds a window.
pub fn measure_windows(req: &WindowRequest) -> k3_io::Result<Option<WindowResult>> {
    let window = req.window_bytes.max(1);
    let mut files = Vec::new();
    for path in &req.files {
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if len >= window as u64 {
            files.push((DirectFile::open(path)?, len));
        }
    }
    if files.is_empty() {
        return Ok(None);
    }
    let direct = files.iter().all(|(f, _)| f.is_direct());
    let reader = Reader::new(req.pattern)?;
    // Room for the window widened outward to 4096 at both ends.
    let mut blob = Blob::zeroed(window + 2 * 4096);
    let mut rng = ChaCha8Rng::seed_from_u64(0x7769_6e64);
    let (mut file, mut offset, mut bytes_read) = (0, 0u64, 0u64);
    let start = Instant::now();
    while bytes_read < req.bytes.max(1) {
        let (f, at, urgency) = match req.order {
            Order::Random => {
                let f = rng.random_range(0..files.len());
                (f, rng.random_range(0..=files[f].1 - window as u64), Urgency::Now)
            }
            Order::Sequential => {
                if offset + window as u64 > files[file].1 {
                    (file, offset) = ((file + 1) % files.len(), 0);
                }
                offset += window as u64;
                (file, offset - window as u64, Urgency::Next)
            }
        };
        reader.read_window_into(&files[f].0, &mut blob, at, window, urgency, Checksum::Crc32)?;
        bytes_read += window as u64;
    }
    let seconds = start.elapsed().as_secs_f64();
    let gbps = bytes_read as f64 / seconds.max(1e-9) / 1e9;
    Ok(Some(WindowResult { order: req.order, window_bytes: window, bytes_read, seconds, gbps, direct }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskbench::{ScratchFile, MIB};

    fn request(files: Vec<PathBuf>, window_bytes: usize, order: Order) -> WindowRequest {
        WindowRequest { files, window_bytes, order, bytes: 6 * MIB as u64, pattern: ReadPattern::DEFAULT }
    }

    #[test]
    fn both_orders_read_whole_windows_until_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let a = ScratchFile::create(dir.path(), 4 * MIB as u64, &std::sync::atomic::AtomicBool::new(false)).unwrap();
        for order in [Order::Sequential, Order::Random] {
            // 1.5 MiB + 1 byte: unaligned windows (an expert's length) are widened and read.
            let r = measure_windows(&request(vec![a.path().to_path_buf()], 3 * MIB / 2 + 1, order)).unwrap().unwrap();
            assert_eq!(r.bytes_read, 4 * (3 * MIB as u64 / 2 + 1), "{r:?}");
            assert!(r.gbps > 0.0 && r.order == order, "{r:?}");
        }
    }

    #[test]
    fn files_shorter_than_a_window_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let a = ScratchFile::create(dir.path(), MIB as u64, &std::sync::atomic::AtomicBool::new(false)).unwrap();
        assert_eq!(measure_windows(&request(vec![a.path().to_path_buf()], 2 * MIB, Order::Random)).unwrap(), None);
    }
}
