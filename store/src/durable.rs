//! Writing files so a crash leaves either the old or the new contents, never a mix:
//! temporary name → `fsync` → `rename` → `fsync(dir)` (RELIABILITY §1 "No data lost").
//!
//! Owns: [`write_atomic`] (and its owner-only twin [`write_atomic_private`]), [`fsync_dir`],
//! [`create_dirs`]; [`write_atomic_in`] does the same through a `WriteStorage` (the seam of
//! `k3_io::storage`, where tests inject write faults and power cuts). Must not: reuse a temporary name another process could be writing
//! (names carry the pid and a counter).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use k3_io::storage::{write_all_at, OpenMode, OsStorage, WriteStorage};

use crate::error::{StoreError, StoreResult};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> StoreResult<()> {
    write_atomic_in(&OsStorage, path, bytes, false)
}

/// [`write_atomic`] for a secret (a token): the file is readable and writable by its owner
/// only from the moment it exists (mode 0600 on Unix), never briefly wider.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> StoreResult<()> {
    write_atomic_in(&OsStorage, path, bytes, true)
}

/// [`write_atomic`] through `storage`; `owner_only` as [`write_atomic_private`].
pub fn write_atomic_in(storage: &dyn WriteStorage, path: &Path, bytes: &[u8], owner_only: bool) -> StoreResult<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dirs(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
    let result = (|| {
        let f = storage.open(&tmp, OpenMode::CreateNew { owner_only })?;
        write_all_at(&*f, bytes, 0)?;
        f.sync_all()
    })();
    if let Err(e) = result {
        let _ = storage.remove_file(&tmp);
        return Err(StoreError::io(&tmp, e));
    }
    storage.rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    storage.sync_dir(dir).map_err(|e| StoreError::io(dir, e))
}

/// Makes a rename or create inside `dir` durable.
pub fn fsync_dir(dir: &Path) -> StoreResult<()> {
    k3_io::os::sync_dir(dir).map_err(|e| StoreError::io(dir, e))
}

pub fn create_dirs(dir: &Path) -> StoreResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))
}
