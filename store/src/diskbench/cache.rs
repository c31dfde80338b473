//! The page cache kept out of a measurement: dropping a file's cached pages, and spotting
//! file systems that live in RAM (where no read is a drive's).
//!
//! Owns: `POSIX_FADV_DONTNEED` over a whole file (through `nix`, no `unsafe` here) and the
//! `statfs` magic numbers of tmpfs and ramfs.
//! Easy to break: DONTNEED drops only clean pages: a file just written must be synced first.

use std::path::Path;

use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};
use nix::sys::statfs::{statfs, FsType, TMPFS_MAGIC};

use super::DiskBenchError;

/// `RAMFS_MAGIC` of `linux/magic.h` (nix names only tmpfs's).
const RAMFS_MAGIC: FsType = FsType(0x8584_58f6);

/// Asks the kernel to drop every cached page of `file` (clean pages only).
pub fn drop_cached_file(file: &std::fs::File, path: &Path) -> Result<(), DiskBenchError> {
    posix_fadvise(file, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED)
        .map_err(|e| DiskBenchError::io(path, std::io::Error::from(e)))
}

/// Drops every cached page of the file at `path`.
pub fn drop_cached(path: &Path) -> Result<(), DiskBenchError> {
    let file = std::fs::File::open(path).map_err(|e| DiskBenchError::io(path, e))?;
    drop_cached_file(&file, path)
}

/// The name of the RAM file system `path` is on, if it is on one.
pub fn ram_file_system(path: &Path) -> Option<&'static str> {
    let fs = statfs(path).ok()?.filesystem_type();
    if fs == TMPFS_MAGIC {
        Some("tmpfs")
    } else if fs == RAMFS_MAGIC {
        Some("ramfs")
    } else {
        None
    }
}
