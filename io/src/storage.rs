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
use std::sync::Arc;

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

/// An OS file behind [`StoredFile`].
struct OsFile(File);

impl StoredFile for OsFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        crate::os::write_at(&self.0, buf, offset)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        crate::os::read_at(&self.0, buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        self.0.metadata().map(|m| m.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
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
        Ok(Box::new(OsFile(o.open(path)?)))
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
pub fn write_all_at(file: &dyn StoredFile, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.write_at(buf, offset) {
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
