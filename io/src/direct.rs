//! Positioned reads that keep the page cache out of the way: each system's bypass where the
//! file system allows it (Linux O_DIRECT, macOS F_NOCACHE, Windows
//! FILE_FLAG_NO_BUFFERING: `io::os`), buffered reads (pages dropped on Linux) where it
//! refuses.
//!
//! Owns: opening a file for direct reads, widening a read window outward to 4096-byte
//! boundaries into an aligned [`Blob`], looping over short reads and `EINTR`.
//! Must not: return a window whose payload was not fully read (a short read before the
//! payload end is an error naming the file and offset), or zero-fill missing bytes.
//! Easy to break: O_DIRECT needs the buffer address, the file offset and the length all
//! aligned; only the payload `[offset, offset + len)` is guaranteed to exist in the file,
//! the widened tail may run past EOF.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::blob::{Blob, ByteView};
use crate::error::{Error, Result};
use crate::os::{self, CacheBypass};
use crate::storage::{OsRead, PositionedRead};

/// Alignment of O_DIRECT reads.
pub const ALIGN: u64 = 4096;

/// A file opened for reads that bypass (or at least do not fill) the page cache.
pub struct DirectFile {
    file: File,
    path: PathBuf,
    /// How reads keep the page cache out of the way (or why they cannot).
    bypass: CacheBypass,
}

impl DirectFile {
    /// Opens `path` with this system's cache bypass, falling back to buffered reads where
    /// the file system refuses it (`io::os::open_uncached`).
    pub fn open(path: &Path) -> Result<DirectFile> {
        let (file, bypass) = os::open_uncached(path).map_err(|e| Error::io(path, e))?;
        Ok(DirectFile { file, path: path.to_path_buf(), bypass })
    }

    /// True when reads bypass the page cache (false: the buffered fallback).
    pub fn is_direct(&self) -> bool {
        self.bypass.bypasses_cache()
    }

    /// How reads keep the page cache out of the way, for reports.
    pub fn bypass(&self) -> CacheBypass {
        self.bypass
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads `[offset, offset + len)` into a fresh blob; returns the view of exactly those bytes.
    pub fn read_window(&self, offset: u64, len: usize) -> Result<ByteView> {
        let (start, padded) = widen(offset, len);
        let mut blob = Blob::zeroed(padded);
        let payload_start = (offset - start) as usize;
        self.read_into(&mut blob, start, payload_start + len)?;
        let blob = Arc::new(blob);
        ByteView::new(blob, payload_start, len).ok_or_else(|| {
            Error::io(&self.path, std::io::Error::new(ErrorKind::InvalidData, "read window does not hold the payload"))
        })
    }

    /// Reads the widened window of `[offset, offset + len)` into `blob` (which must hold it);
    /// returns where the payload starts in the blob.
    pub fn read_window_into(&self, blob: &mut Blob, offset: u64, len: usize) -> Result<usize> {
        let (start, padded) = widen(offset, len);
        if blob.capacity() < padded {
            return Err(Error::io(&self.path, std::io::Error::new(ErrorKind::InvalidInput, "read buffer too small")));
        }
        let payload_start = (offset - start) as usize;
        self.read_into(blob, start, payload_start + len)?;
        Ok(payload_start)
    }

    /// Fills `blob` from the aligned file offset `start` until at least `need` bytes are in.
    fn read_into(&self, blob: &mut Blob, start: u64, need: usize) -> Result<()> {
        let padded = (need as u64).div_ceil(ALIGN) * ALIGN;
        self.read_range(&mut blob.pages_mut()[..padded as usize], start, need)
    }

    /// Fills `buf` (4096-aligned, a whole number of pages) from the aligned file offset
    /// `start` until at least `need` bytes are in, with the operating system's `pread`.
    pub fn read_range(&self, buf: &mut [u8], start: u64, need: usize) -> Result<()> {
        self.read_range_via(&OsRead, buf, start, need)
    }

    /// [`Self::read_range`] through `io`, the storage seam (`io::storage`): each call asks
    /// for at most 1 GiB (Linux caps one call just below 2 GiB, macOS fails larger ones),
    /// short reads are continued, `EINTR` is retried; any other failure, the end of the
    /// file before `need`, or a call reporting more bytes than it was asked for is
    /// [`Error::Read`] naming the file and the offset of the failing call.
    pub fn read_range_via(&self, io: &dyn PositionedRead, buf: &mut [u8], start: u64, need: usize) -> Result<()> {
        let mut done = 0usize;
        while done < need {
            let end = buf.len().min(done + MAX_CALL_BYTES);
            let at = start + done as u64;
            let asked = end - done;
            let fail = |source: std::io::Error| Error::Read { path: self.path.clone(), offset: at, len: asked, source };
            match io.read_at(&self.file, &self.path, &mut buf[done..end], at) {
                Ok(0) => {
                    let msg = format!("short read: the file ends {} bytes before the data does", need - done);
                    return Err(fail(std::io::Error::new(ErrorKind::UnexpectedEof, msg)));
                }
                Ok(n) if n > asked => {
                    let msg = format!("the read reports {n} bytes for a request of {asked}");
                    return Err(fail(std::io::Error::new(ErrorKind::InvalidData, msg)));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(fail(e)),
            }
            // O_DIRECT (and NO_BUFFERING) continue only from aligned offsets; a short read
            // mid-file that is not aligned can only be the end of the file.
            if self.bypass.needs_alignment() && !done.is_multiple_of(ALIGN as usize) && done < need {
                let msg = "short read: O_DIRECT stopped at an unaligned offset before the data's end";
                return Err(fail(std::io::Error::new(ErrorKind::UnexpectedEof, msg)));
            }
        }
        if !self.bypass.bypasses_cache() {
            os::drop_cached(&self.file, start, buf.len() as u64);
        }
        Ok(())
    }
}

/// The most one `pread` asks for (aligned).
const MAX_CALL_BYTES: usize = 1 << 30;

/// The window `[offset, offset + len)` widened outward to `ALIGN`: (start, length).
pub fn widen(offset: u64, len: usize) -> (u64, usize) {
    let start = offset / ALIGN * ALIGN;
    let end = (offset + len as u64).div_ceil(ALIGN) * ALIGN;
    (start, (end - start) as usize)
}
