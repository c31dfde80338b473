//! `io::os` on Linux and macOS: `pread`/`pwrite`, `O_DIRECT` (Linux), `F_NOCACHE` with
//! read-ahead off (macOS), `posix_fadvise`, `O_NOFOLLOW`, mode 0600, folder `fsync`.
//!
//! Owns: the `unsafe` FFI calls of the engine's file I/O on Unix (`posix_fadvise`,
//! `fcntl`), each with its `SAFETY:` note.
//! Must not: be reached except through `io::os`, which documents each function.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::bypass::CacheBypass;

#[cfg(target_os = "linux")]
pub(super) fn open_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
        Ok(file) => Ok((file, CacheBypass::Direct)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let why = "the file system refuses O_DIRECT; pages are dropped after each read";
            Ok((File::open(path)?, CacheBypass::Buffered { why }))
        }
        Err(e) => Err(e),
    }
}

#[cfg(target_os = "linux")]
pub(super) fn create_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    match options.clone().custom_flags(libc::O_DIRECT).open(path) {
        Ok(file) => Ok((file, CacheBypass::Direct)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            Ok((options.open(path)?, CacheBypass::Buffered { why: "the file system refuses O_DIRECT" }))
        }
        Err(e) => Err(e),
    }
}

/// A second handle on `file`'s own inode (through `/proc/self/fd`, so never a different
/// file planted at its name since) whose writes bypass the page cache.
#[cfg(target_os = "linux")]
pub(super) fn reopen_uncached_for_write(file: &File) -> io::Result<(Option<File>, CacheBypass)> {
    use std::os::fd::AsRawFd;
    let own = format!("/proc/self/fd/{}", file.as_raw_fd());
    match OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(&own) {
        Ok(direct) => Ok((Some(direct), CacheBypass::Direct)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            Ok((None, CacheBypass::Buffered { why: "the file system refuses O_DIRECT" }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((
            None,
            CacheBypass::Buffered { why: "/proc is not mounted, so the file cannot be reopened for O_DIRECT" },
        )),
        Err(e) => Err(e),
    }
}

/// macOS: writes stay buffered. `F_NOCACHE` belongs to the open file description, which a
/// second handle (`dup`, `/dev/fd/N`) shares, so it would reach every read of the partial too;
/// not built, as nothing here can run it.
#[cfg(not(target_os = "linux"))]
pub(super) fn reopen_uncached_for_write(_file: &File) -> io::Result<(Option<File>, CacheBypass)> {
    Ok((None, CacheBypass::Buffered { why: "writes bypass the page cache only on Linux" }))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn create_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    let file = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
    let bypass = nocache(&file);
    Ok((file, bypass))
}

/// `F_NOCACHE` on, read-ahead off (macOS).
#[cfg(target_os = "macos")]
fn nocache(file: &File) -> CacheBypass {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: `fcntl` with F_NOCACHE / F_RDAHEAD takes an integer argument and only changes
    // the descriptor's caching flags; `fd` is valid for the lifetime of `file`.
    let (nocache, _rdahead) = unsafe { (libc::fcntl(fd, libc::F_NOCACHE, 1), libc::fcntl(fd, libc::F_RDAHEAD, 0)) };
    // A refused read-ahead only costs speed: the reads still bypass the cache.
    if nocache == -1 {
        CacheBypass::Buffered { why: "the file system refuses F_NOCACHE" }
    } else {
        CacheBypass::NoCache
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn nocache(_file: &File) -> CacheBypass {
    CacheBypass::Buffered { why: "this system has no cache bypass the engine knows" }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn open_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    let file = File::open(path)?;
    let bypass = nocache(&file);
    Ok((file, bypass))
}

#[cfg(target_os = "linux")]
pub(super) fn drop_cached(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is valid for the
    // lifetime of `file`, and an out-of-range offset or length is reported, not undefined.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), offset as libc::off_t, len as libc::off_t, libc::POSIX_FADV_DONTNEED);
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn drop_cached(_file: &File, _offset: u64, _len: u64) {}

pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    FileExt::read_at(file, buf, offset)
}

pub(super) fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    FileExt::write_at(file, buf, offset)
}

pub(super) fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NOFOLLOW)
}

pub(super) fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(0o600)
}

pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

pub(super) fn same_file(before: &Metadata, opened: &Metadata) -> bool {
    opened.dev() == before.dev() && opened.ino() == before.ino()
}

pub(super) fn special_kind(file_type: FileType) -> &'static str {
    if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

pub(super) fn is_link_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}
