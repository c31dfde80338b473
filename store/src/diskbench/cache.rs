//! The page cache kept out of a measurement: dropping a file's cached pages, and spotting
//! file systems that live in RAM (where no read is a drive's).
//!
//! Owns: dropping a whole file's pages (`k3_io::os::drop_cached`: Linux
//! `POSIX_FADV_DONTNEED`; macOS and Windows read around the cache instead) and, on Linux,
//! the `statfs` magic numbers of tmpfs and ramfs.
//! Easy to break: DONTNEED drops only clean pages: a file just written must be synced first.

use std::path::Path;

use super::DiskBenchError;

/// Asks the kernel to drop every cached page of `file` (clean pages only; advice, so it
/// cannot fail).
pub fn drop_cached_file(file: &std::fs::File, _path: &Path) -> Result<(), DiskBenchError> {
    k3_io::os::drop_cached(file, 0, 0);
    Ok(())
}

/// Drops every cached page of the file at `path`.
pub fn drop_cached(path: &Path) -> Result<(), DiskBenchError> {
    let file = std::fs::File::open(path).map_err(|e| DiskBenchError::io(path, e))?;
    drop_cached_file(&file, path)
}

/// The name of the RAM file system `path` is on, if it is on one (Linux's tmpfs and
/// ramfs; other systems have no RAM file system a model folder is put on by accident).
#[cfg(target_os = "linux")]
pub fn ram_file_system(path: &Path) -> Option<&'static str> {
    use nix::sys::statfs::{statfs, FsType, TMPFS_MAGIC};
    /// `RAMFS_MAGIC` of `linux/magic.h` (nix names only tmpfs's).
    const RAMFS_MAGIC: FsType = FsType(0x8584_58f6);
    let fs = statfs(path).ok()?.filesystem_type();
    if fs == TMPFS_MAGIC {
        Some("tmpfs")
    } else if fs == RAMFS_MAGIC {
        Some("ramfs")
    } else {
        None
    }
}

/// The name of the RAM file system `path` is on: none outside Linux.
#[cfg(not(target_os = "linux"))]
pub fn ram_file_system(_path: &Path) -> Option<&'static str> {
    None
}
