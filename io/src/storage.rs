//! The storage seam: the one place streamed reads and the pack's writes meet the operating
//! system, as two small traits a test can replace with one that fails on purpose.
//!
//! Owns: [`PositionedRead`] — one `pread(2)`-like call, which `io::direct`'s loop (the
//! 1 GiB clamp, continuing short reads, retrying `EINTR`, refusing a length the call did
//! not ask for) drives for every streamed trunk and expert read; [`OsRead`], today's
//! `pread`. [`WriteStorage`] and [`StoredFile`] — open, positioned write and read, length,
//! `fdatasync`/`fsync`, rename, remove and `fsync(dir)`, what `k3 pack` writes through (and
//! `k3-store`'s download journal); [`OsStorage`], the real file system.
//! Must not: loop, retry or interpret anything: the production logic lives in the callers,
//! so a test storage that returns short reads, `EINTR`, `EIO` or `ENOSPC` exercises exactly
//! the code that runs in production.
//! Easy to break: a [`PositionedRead`] sees the `File` the caller opened (with O_DIRECT when
//! the file system allowed it), so a wrapper must pass aligned buffers through unchanged.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::direct::ALIGN;
use crate::os::CacheBypass;

/// One positioned read, like `pread(2)`: fills a prefix of `buf` from `offset` of `file`
/// (opened from `path`) and returns its length — fewer bytes than asked is allowed, `Ok(0)`
/// is the end of the file, `ErrorKind::Interrupted` asks the caller to try again.
pub trait PositionedRead: Send + Sync + std::fmt::Debug {
    fn read_at(&self, file: &File, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

/// The operating system's `pread`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRead;

impl PositionedRead for OsRead {
    fn read_at(&self, file: &File, _path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        crate::os::read_at(file, buf, offset)
    }
}

/// The production read path, shared.
pub fn os_read() -> Arc<dyn PositionedRead> {
    Arc::new(OsRead)
}

/// How [`WriteStorage::open`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write, created when missing, emptied when `truncate`.
    ReadWrite { truncate: bool },
    /// Read and write, and the file must not exist yet; `owner_only`: mode 0600 from the
    /// moment it exists (a secret).
    CreateNew { owner_only: bool },
}

/// A file opened through a [`WriteStorage`]: positioned I/O and durability, nothing else.
pub trait StoredFile: Send + Sync {
    /// One positioned write, like `pwrite(2)`: may write fewer bytes than given.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;
    /// [`Self::write_at`] keeping the page cache out of the way where it can: bytes written
    /// once and not read back soon (a download's chunks). The same durability: a later
    /// [`Self::sync_data`] covers them. By default, and for a test storage, `write_at`.
    fn write_uncached_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.write_at(buf, offset)
    }
    /// How [`Self::write_uncached_at`] keeps the page cache out of the way, or why it cannot.
    fn write_bypass(&self) -> CacheBypass {
        CacheBypass::Buffered { why: "this storage has no uncached writes" }
    }
    /// One positioned read, like `pread(2)`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The file's size in bytes.
    fn size(&self) -> io::Result<u64>;
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// `fdatasync(2)`: the data written so far survives a power cut.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync(2)`: the data and the metadata (length) survive a power cut.
    fn sync_all(&self) -> io::Result<()>;
}

/// Where writers that must survive a crash put their bytes.
pub trait WriteStorage: Send + Sync + std::fmt::Debug {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StoredFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// `fsync(2)` of a folder: the names created, renamed or removed in it survive.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsStorage;

/// An OS file behind [`StoredFile`], and (opened at its first uncached write) a second handle
/// on it whose writes bypass the page cache.
struct OsFile {
    file: File,
    uncached: OnceLock<(Option<File>, CacheBypass)>,
    /// Set when a direct write was refused after the handle opened (some FUSE and network
    /// file systems accept `O_DIRECT` at open and refuse the writes): buffered from then on.
    refused: AtomicBool,
}

impl OsFile {
    fn new(file: File) -> OsFile {
        OsFile { file, uncached: OnceLock::new(), refused: AtomicBool::new(false) }
    }

    /// The bypassing handle, opened once; `None` (logged once, naming why) where the system
    /// or the file system refuses, and writes stay buffered.
    fn uncached(&self) -> &(Option<File>, CacheBypass) {
        self.uncached.get_or_init(|| {
            let opened = crate::os::reopen_uncached_for_write(&self.file).unwrap_or_else(|e| {
                log::warn!("reopening a file for O_DIRECT writes failed: {e}");
                (None, CacheBypass::Buffered { why: "reopening the file for O_DIRECT failed" })
            });
            // Named once per process (a download opens a partial per file).
            static NAMED: AtomicBool = AtomicBool::new(false);
            if let CacheBypass::Buffered { why } = opened.1 {
                if !NAMED.swap(true, Ordering::Relaxed) {
                    log::warn!("writes go through the page cache: {why}");
                }
            }
            opened
        })
    }
}

/// How many leading bytes of `buf` at `offset` an aligned (O_DIRECT) write may take: whole
/// [`ALIGN`] blocks from an aligned address at an aligned offset, else none.
fn aligned_prefix(buf: &[u8], offset: u64) -> usize {
    let aligned = offset.is_multiple_of(ALIGN) && (buf.as_ptr() as usize).is_multiple_of(ALIGN as usize);
    if aligned {
        buf.len() - buf.len() % ALIGN as usize
    } else {
        0
    }
}

/// One uncached write: `direct` when there is one and it was never refused, else `buffered`.
/// A direct write refused with `EINVAL` (`InvalidInput`) sets `refused`, is logged, and is
/// written `buffered` instead: nothing fails for want of a cache bypass.
fn direct_or_buffered(
    direct: Option<impl FnOnce() -> io::Result<usize>>,
    buffered: impl FnOnce() -> io::Result<usize>,
    refused: &AtomicBool,
) -> io::Result<usize> {
    match direct {
        Some(direct) if !refused.load(Ordering::Relaxed) => match direct() {
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                if !refused.swap(true, Ordering::Relaxed) {
                    log::warn!("writes go through the page cache: the file system refused an O_DIRECT write ({e})");
                }
                buffered()
            }
            done => done,
        },
        _ => buffered(),
    }
}

impl StoredFile for OsFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        crate::os::write_at(&self.file, buf, offset)
    }
    fn write_uncached_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let prefix = aligned_prefix(buf, offset);
        // The aligned blocks bypass the cache; an unaligned tail (a file's last bytes) is
        // written buffered by the caller's next call.
        let direct = self.uncached().0.as_ref().filter(|_| prefix > 0);
        direct_or_buffered(
            direct.map(|d| move || crate::os::write_at(d, &buf[..prefix], offset)),
            || crate::os::write_at(&self.file, buf, offset),
            &self.refused,
        )
    }
    fn write_bypass(&self) -> CacheBypass {
        if self.refused.load(Ordering::Relaxed) {
            return CacheBypass::Buffered { why: "the file system refused an O_DIRECT write" };
        }
        self.uncached().1
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        crate::os::read_at(&self.file, buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        self.file.metadata().map(|m| m.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    // `fdatasync` is per file, not per handle: it covers the bypassing handle's writes too
    // (and flushes the drive's cache they may sit in).
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()
    }
}

impl WriteStorage for OsStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StoredFile>> {
        let mut o = OpenOptions::new();
        match mode {
            OpenMode::Read => o.read(true),
            // Never written through a symbolic link planted at the name (probe finding: a
            // download's `.part` replaced by a link wrote over the file it named).
            OpenMode::ReadWrite { truncate } => {
                crate::os::no_follow(o.read(true).write(true).create(true).truncate(truncate))
            }
            OpenMode::CreateNew { owner_only } => {
                if owner_only {
                    crate::os::owner_only(&mut o);
                }
                o.read(true).write(true).create_new(true)
            }
        };
        Ok(Box::new(OsFile::new(o.open(path)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        crate::os::sync_dir(dir)
    }
}

/// Writes all of `buf` at `offset`, continuing short writes and retrying `EINTR`; a call
/// that writes nothing is `WriteZero` (a full drive reports `ENOSPC` itself).
pub fn write_all_at(file: &dyn StoredFile, buf: &[u8], offset: u64) -> io::Result<()> {
    write_all_by(buf, offset, |b, o| file.write_at(b, o))
}

/// [`write_all_at`] through [`StoredFile::write_uncached_at`]: the page cache is bypassed for
/// the aligned blocks where the system allows it.
pub fn write_all_uncached_at(file: &dyn StoredFile, buf: &[u8], offset: u64) -> io::Result<()> {
    write_all_by(buf, offset, |b, o| file.write_uncached_at(b, o))
}

fn write_all_by(
    mut buf: &[u8],
    mut offset: u64,
    mut write: impl FnMut(&[u8], u64) -> io::Result<usize>,
) -> io::Result<()> {
    while !buf.is_empty() {
        match write(buf, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "the write stored no byte")),
            Ok(n) if n > buf.len() => {
                let msg = format!("the storage reports {n} bytes written of {}", buf.len());
                return Err(io::Error::new(io::ErrorKind::InvalidData, msg));
            }
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills all of `buf` from `offset`, continuing short reads and retrying `EINTR`; the end
/// of the file first is `UnexpectedEof`.
pub fn read_exact_at(file: &dyn StoredFile, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends before the data")),
            Ok(n) if n > buf.len() => {
                let msg = format!("the storage reports {n} bytes read of {}", buf.len());
                return Err(io::Error::new(io::ErrorKind::InvalidData, msg));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes `bytes` the whole of `path` (created or emptied) and `fsync`s it, through
/// `storage`. No rename: a caller that publishes writes a `*.partial` name and renames.
pub fn write_file_synced(storage: &dyn WriteStorage, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let f = storage.open(path, OpenMode::ReadWrite { truncate: true })?;
    write_all_at(&*f, bytes, 0)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Blob;

    #[test]
    fn only_whole_blocks_from_an_aligned_address_at_an_aligned_offset_bypass_the_cache() {
        let blob = Blob::zeroed(3 * 4096 + 100);
        assert_eq!(aligned_prefix(blob.bytes(), 0), 3 * 4096);
        assert_eq!(aligned_prefix(blob.bytes(), 8192), 3 * 4096);
        assert_eq!(aligned_prefix(blob.bytes(), 100), 0, "an unaligned offset");
        assert_eq!(aligned_prefix(&blob.bytes()[1..], 0), 0, "an unaligned address");
        assert_eq!(aligned_prefix(&blob.bytes()[..100], 0), 0, "less than a block");
    }

    #[test]
    fn a_refused_direct_write_is_written_buffered_and_later_ones_skip_the_direct_handle() {
        let refused = AtomicBool::new(false);
        let einval = || Err(io::Error::from(io::ErrorKind::InvalidInput));
        let direct_calls = std::cell::Cell::new(0);
        let direct = || {
            direct_calls.set(direct_calls.get() + 1);
            einval()
        };
        assert_eq!(direct_or_buffered(Some(direct), || Ok(7), &refused).unwrap(), 7);
        assert!(refused.load(Ordering::Relaxed));
        let direct = || {
            direct_calls.set(direct_calls.get() + 1);
            Ok(4096)
        };
        assert_eq!(direct_or_buffered(Some(direct), || Ok(7), &refused).unwrap(), 7, "buffered from then on");
        assert_eq!(direct_calls.get(), 1);
        // Any other error of a direct write is the write's error, not a fallback.
        let fresh = AtomicBool::new(false);
        let eio = || Err(io::Error::other("EIO"));
        assert!(direct_or_buffered(Some(eio), || Ok(7), &fresh).is_err());
        assert!(!fresh.load(Ordering::Relaxed));
        assert_eq!(direct_or_buffered(Some(|| Ok(4096)), || Ok(7), &fresh).unwrap(), 4096);
    }

    /// The pages of `path` resident in the page cache, by `mincore(2)` on a mapping of it.
    #[cfg(target_os = "linux")]
    fn resident_pages(path: &Path) -> usize {
        use std::os::fd::AsRawFd;
        let file = File::open(path).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        let mut resident = vec![0u8; len.div_ceil(4096)];
        // SAFETY: a read-only shared mapping of `len` bytes of an open file, only passed to
        // mincore (never read through) and unmapped before the file closes; `resident` has
        // one byte per page of it, as mincore(2) requires.
        unsafe {
            let map = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0);
            assert_ne!(map, libc::MAP_FAILED);
            assert_eq!(libc::mincore(map, len, resident.as_mut_ptr()), 0);
            libc::munmap(map, len);
        }
        resident.iter().filter(|&&b| b & 1 == 1).count()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn uncached_writes_store_the_same_bytes_and_leave_the_aligned_blocks_out_of_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let (direct_path, buffered_path) = (dir.path().join("direct"), dir.path().join("buffered"));
        let mut blob = Blob::zeroed(64 * 4096 + 1000);
        for (i, b) in blob.bytes_mut().iter_mut().enumerate() {
            *b = (i * 31 % 251) as u8;
        }
        let mode = OpenMode::ReadWrite { truncate: true };
        let direct = OsStorage.open(&direct_path, mode).unwrap();
        write_all_uncached_at(&*direct, blob.bytes(), 0).unwrap();
        direct.sync_data().unwrap();
        let buffered = OsStorage.open(&buffered_path, mode).unwrap();
        write_all_at(&*buffered, blob.bytes(), 0).unwrap();
        buffered.sync_data().unwrap();
        assert_eq!(std::fs::read(&direct_path).unwrap(), blob.bytes(), "the same bytes");
        if direct.write_bypass() != CacheBypass::Direct {
            // A file system without O_DIRECT (tmpfs before Linux 6.6): named, and buffered.
            assert!(matches!(direct.write_bypass(), CacheBypass::Buffered { .. }));
            return;
        }
        // The read above filled the cache again: write once more, then count.
        write_all_uncached_at(&*direct, blob.bytes(), 0).unwrap();
        // The 64 aligned blocks bypassed the cache; the tail's page went through it.
        assert!(resident_pages(&direct_path) <= 1, "{} pages resident", resident_pages(&direct_path));
        assert_eq!(resident_pages(&buffered_path), 65);
    }
}
