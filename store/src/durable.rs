//! Writing files so a crash leaves either the old or the new contents, never a mix:
//! temporary name → `fsync` → `rename` → `fsync(dir)` (RELIABILITY §1 "No data lost").
//!
//! Owns: [`write_atomic`] (and its owner-only twin [`write_atomic_private`]), [`fsync_dir`],
//! [`create_dirs`]. Must not: reuse a temporary name another process could be writing
//! (names carry the pid and a counter).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{StoreError, StoreResult};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> StoreResult<()> {
    write_atomic_with(path, bytes, OpenOptions::new())
}

/// [`write_atomic`] for a secret (a token): the file is readable and writable by its owner
/// only from the moment it exists (mode 0600 on Unix), never briefly wider.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> StoreResult<()> {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    write_atomic_with(path, bytes, options)
}

fn write_atomic_with(path: &Path, bytes: &[u8], mut options: OpenOptions) -> StoreResult<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dirs(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
    let result = (|| {
        let mut f = options.write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::io(&tmp, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    fsync_dir(dir)
}

/// Makes a rename or create inside `dir` durable.
pub fn fsync_dir(dir: &Path) -> StoreResult<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| StoreError::io(dir, e))
}

pub fn create_dirs(dir: &Path) -> StoreResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))
}
