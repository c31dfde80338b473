//! Crash points for the kill tests (RELIABILITY DL-02): in debug builds, the environment
//! variable `K3_STORE_FAILPOINT=name` (or `name@N` for the N-th hit) kills this process
//! with SIGKILL at that point, exactly as a crash would, with no destructor or flush run.
//!
//! Owns: [`hit`] and the names of the points. Must not: exist in release builds (the
//! function is empty there), or do anything but kill.

/// After the chunk's bytes are written, before `fdatasync`.
pub const AFTER_WRITE: &str = "after-write";
/// After `fdatasync` of the data, before the journal record.
pub const AFTER_DATA_SYNC: &str = "after-data-sync";
/// After the journal record is written, before its `fsync`.
pub const AFTER_JOURNAL_WRITE: &str = "after-journal-write";
/// After the journal `fsync`.
pub const AFTER_JOURNAL_SYNC: &str = "after-journal-sync";
/// After the verified file is renamed into place, before the folder `fsync`.
pub const AFTER_RENAME: &str = "after-rename";
/// After the folder `fsync`, before the hf metadata and our verified record.
pub const AFTER_DIR_SYNC: &str = "after-dir-sync";
/// After the hf metadata file, before our verified record.
pub const AFTER_MARKER: &str = "after-marker";

/// Every point, for tests that visit each.
pub const ALL: [&str; 7] =
    [AFTER_WRITE, AFTER_DATA_SYNC, AFTER_JOURNAL_WRITE, AFTER_JOURNAL_SYNC, AFTER_RENAME, AFTER_DIR_SYNC, AFTER_MARKER];

#[cfg(debug_assertions)]
pub fn hit(name: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let spec = std::env::var("K3_STORE_FAILPOINT").ok()?;
        let (point, nth) = match spec.split_once('@') {
            Some((p, n)) => (p.to_string(), n.parse().ok()?),
            None => (spec, 1),
        };
        Some((point, nth))
    });
    if let Some((point, nth)) = target {
        if point == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *nth {
            #[cfg(unix)]
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            // Windows has no signals: an abort also ends the process at once, unwinding nothing.
            #[cfg(not(unix))]
            std::process::abort();
        }
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn hit(_name: &str) {}
