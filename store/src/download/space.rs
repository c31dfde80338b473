//! Is there room? Free space by `statvfs`, checked before the first byte and on every
//! resume (store + trunk + 1%, PRODUCT.md §1.1), and waited for when a write hits ENOSPC
//! mid-download (RELIABILITY DL-17).
//!
//! Owns: [`free_bytes`], [`check`]; what is needed and the shortfall's message are
//! `shortfall`'s.
//! Must not: count space reserved for root as free (`f_bavail`, not `f_bfree`).

use std::path::Path;

pub use super::shortfall::{tb, Need, Shortfall, Unit};
use crate::error::{StoreError, StoreResult};

/// Bytes an unprivileged writer can still use on the file system holding `path`
/// (`statvfs`'s `f_bavail`; Windows `GetDiskFreeSpaceExW`, which counts the user's quota).
pub fn free_bytes(path: &Path) -> StoreResult<u64> {
    fs4::available_space(path).map_err(|e| StoreError::io(path, e))
}

/// The file system a path is on (to tell whether store and trunk share one): the device
/// number on Unix.
#[cfg(unix)]
pub fn device_of(path: &Path) -> StoreResult<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| m.dev()).map_err(|e| StoreError::io(path, e))
}

/// The file system a path is on: on Windows, a hash of the volume prefix (`C:`,
/// `\\server\share`) of its full path.
#[cfg(windows)]
pub fn device_of(path: &Path) -> StoreResult<u64> {
    use std::hash::{Hash, Hasher};
    let full = std::fs::canonicalize(path).map_err(|e| StoreError::io(path, e))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Some(std::path::Component::Prefix(prefix)) = full.components().next() {
        prefix.as_os_str().to_ascii_uppercase().hash(&mut h);
    }
    Ok(h.finish())
}

/// `Err(NoSpace)` when `dir`'s file system cannot hold `need`.
pub fn check(dir: &Path, need: Need) -> StoreResult<()> {
    let free = free_bytes(dir)?;
    if free >= need.total() {
        return Ok(());
    }
    Err(StoreError::NoSpace(Shortfall { dir: dir.to_path_buf(), need, free }))
}
