//! The one place the engine's file I/O differs by operating system.
//!
//! Owns: how a weight file is opened so its reads bypass the page cache ([`open_uncached`],
//! naming the way in a [`CacheBypass`]) — Linux `O_DIRECT`, macOS `F_NOCACHE` with
//! read-ahead off, Windows `FILE_FLAG_NO_BUFFERING` — and each system's fallback where the
//! file system refuses (buffered reads, pages dropped on Linux); positioned reads and
//! writes ([`read_at`], [`write_at`], [`read_exact_at`]: `pread`/`pwrite`, Windows
//! `ReadFile`/`WriteFile` at an offset); opening without following a link planted at the
//! name ([`no_follow`]); owner-only new files ([`owner_only`]); a folder's durability
//! ([`sync_dir`]); whether an opened file is the one checked before the open
//! ([`same_file`]); and the name of a non-regular file's kind ([`special_kind`]).
//! Must not: interpret results: the callers in `io::direct`, `io::storage` and `format`
//! judge them, the same on every system ([`read_exact_at`] and [`write_all_at`] only
//! continue short and interrupted transfers).
//! Easy to break: `O_DIRECT` and `FILE_FLAG_NO_BUFFERING` need the buffer address, the
//! file offset and the length aligned ([`CacheBypass::needs_alignment`]): 4096 bytes, a
//! multiple of every sector size in use (512 and 4096). `F_NOCACHE` needs no alignment.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::path::Path;

pub use crate::bypass::CacheBypass;

/// Opens `path` for reading with this system's cache bypass, or buffered where the file
/// system refuses it (the refusal is logged once per file, naming it).
pub fn open_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    let (file, bypass) = imp::open_uncached(path)?;
    if let CacheBypass::Buffered { why } = bypass {
        log::warn!("{}: reads are buffered: {why}", path.display());
    }
    Ok((file, bypass))
}

/// Creates (or empties) `path` for writes that bypass the page cache the same way, or
/// buffered ones where the file system refuses (then the caller syncs and drops pages).
pub fn create_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    imp::create_uncached(path)
}

/// A second handle on the already open `file` for writes that bypass the page cache (Linux:
/// `O_DIRECT` through `/proc/self/fd`, the same inode whatever its name is now), or `None`
/// and the reason where the system or the file system does not allow it. The caller writes
/// only aligned buffers at aligned offsets through it, and syncs through `file`.
pub fn reopen_uncached_for_write(file: &File) -> io::Result<(Option<File>, CacheBypass)> {
    imp::reopen_uncached_for_write(file)
}

/// After a buffered read of `[offset, offset + len)`, asks the system to drop those pages
/// (Linux `POSIX_FADV_DONTNEED`; elsewhere nothing is needed or possible).
pub fn drop_cached(file: &File, offset: u64, len: u64) {
    imp::drop_cached(file, offset, len)
}

/// One positioned read, like `pread(2)`: may return fewer bytes than asked; `Ok(0)` is
/// the end of the file.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    imp::read_at(file, buf, offset)
}

/// One positioned write, like `pwrite(2)`: may write fewer bytes than given.
pub fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    imp::write_at(file, buf, offset)
}

/// Writes all of `buf` at `offset`, continuing short writes and retrying interrupted ones.
pub fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match write_at(file, &buf[done..], offset + done as u64) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "the write stored no byte")),
            Ok(n) => done = (done + n).min(buf.len()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills all of `buf` from `offset`, continuing short reads and retrying interrupted
/// ones; the end of the file first is `UnexpectedEof`.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match read_at(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends before the data does")),
            Ok(n) => done = (done + n).min(buf.len()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes `options` refuse to open through a symbolic link at the name (Unix
/// `O_NOFOLLOW`; Windows opens the link itself, `FILE_FLAG_OPEN_REPARSE_POINT`, which
/// the caller's regular-file checks then refuse).
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    imp::no_follow(options)
}

/// Makes a file `options` creates readable by its owner only (Unix mode 0600; on
/// Windows a new file inherits its folder's access list, which for the app's data folder
/// is the user's profile).
pub fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    imp::owner_only(options)
}

/// Makes the names created, renamed or removed in `dir` durable (`fsync` of the folder on
/// Unix; on Windows, NTFS journals its metadata and a folder cannot be synced).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    imp::sync_dir(dir)
}

/// Whether `opened` (the metadata of a file just opened) is the file `before` described
/// when it was checked: the same device and inode on Unix; on Windows, where std has no
/// stable file index, the same length and modification time.
pub fn same_file(before: &Metadata, opened: &Metadata) -> bool {
    imp::same_file(before, opened)
}

/// The name of a file kind that is not a regular file, for errors.
pub fn special_kind(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        "directory"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else {
        imp::special_kind(file_type)
    }
}

/// Whether an error says a path is not a usable file or folder (a file where a folder
/// was needed, a folder where a file was, a loop of links): the caller's input.
pub fn is_wrong_kind_of_path(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotADirectory | io::ErrorKind::IsADirectory) || imp::is_link_loop(e)
}

#[cfg(unix)]
#[path = "os_unix.rs"]
mod imp;

#[cfg(windows)]
#[path = "os_windows.rs"]
mod imp;
