//! `measure_expert_reads` reads the drive, never the page cache: with the scratch file's
//! every page cached by ordinary reads, the bench's bytes must still all come through the
//! block layer, as counted by this process's `read_bytes` in `/proc/self/io` (bytes this
//! process caused to be fetched from storage; a read served by the cache adds nothing).
//! Unlike a speed comparison this cannot flake on a noisy disk, and cannot pass if the bench
//! read through a warm cache. This test is alone in its binary: other tests' reads would add
//! to the same counter.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use k3_store::diskbench::{measure_expert_reads, ExpertReadRequest, ScratchFile, EXPERT_BLOCK_BYTES, MIB};

/// `read_bytes` of `/proc/self/io`: bytes this process fetched from storage.
fn storage_read_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io (task I/O accounting)");
    let line = text.lines().find_map(|l| l.strip_prefix("read_bytes:")).expect("a read_bytes line");
    line.trim().parse().expect("a number")
}

/// Reads `path` whole with ordinary buffered reads; returns seconds taken.
fn buffered_read(path: &Path) -> f64 {
    let start = Instant::now();
    let mut file = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 4 * MIB];
    while file.read(&mut buf).unwrap() > 0 {}
    start.elapsed().as_secs_f64()
}

fn scratch_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("expert-reads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_warm_page_cache_does_not_serve_the_bench() {
    let dir = scratch_dir();
    let bytes = 96 * MIB as u64;
    let scratch = ScratchFile::create(&dir, bytes, &AtomicBool::new(false)).unwrap();
    buffered_read(scratch.path());
    let before_warm = storage_read_bytes();
    let warm_seconds = buffered_read(scratch.path());
    let warm_fetched = storage_read_bytes() - before_warm;
    assert!(warm_fetched < bytes / 10, "precondition: the file is cached ({warm_fetched} of {bytes} B re-fetched)");

    let req = ExpertReadRequest { depths: vec![1, 16], ..ExpertReadRequest::new(vec![scratch.path().into()], 0.5) };
    let before = storage_read_bytes();
    let report = measure_expert_reads(&req, &mut |_| {}, &AtomicBool::new(false)).unwrap();
    let fetched = storage_read_bytes() - before;

    assert!(report.direct, "the target folder's file system takes O_DIRECT");
    let read: u64 = report.passes.iter().map(|p| p.reads * EXPERT_BLOCK_BYTES as u64).sum();
    assert!(read >= 2 * EXPERT_BLOCK_BYTES as u64);
    assert!(
        fetched >= read / 10 * 9,
        "the bench read {read} B but only {fetched} B came from storage: it read the page cache"
    );
    let warm_mb_s = bytes as f64 / warm_seconds / 1e6;
    eprintln!("warm buffered re-read {warm_mb_s:.0} MB/s; bench {:?}", report.passes);
    drop(scratch);
    let _ = std::fs::remove_dir(&dir);
}
