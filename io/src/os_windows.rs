//! `io::os` on Windows: `FILE_FLAG_NO_BUFFERING`, positioned `ReadFile`/`WriteFile`
//! (std's `seek_read`/`seek_write`, which pass the offset in an `OVERLAPPED` and so are
//! safe from many threads on one handle), `FILE_FLAG_OPEN_REPARSE_POINT` for "never
//! through a link".
//!
//! Owns: nothing `unsafe`: std and `windows-sys`'s constants cover every call.
//! Must not: be reached except through `io::os`, which documents each function.
//! Easy to break: with `FILE_FLAG_NO_BUFFERING` every read's buffer address, offset and
//! length must be multiples of the volume's sector size; the engine's 4096 is a multiple
//! of 512 and 4096, the sector sizes in use.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use windows_sys::Win32::Foundation::ERROR_INVALID_PARAMETER;
use windows_sys::Win32::Storage::FileSystem::{
    FILE_FLAG_NO_BUFFERING, FILE_FLAG_OPEN_REPARSE_POINT, FILE_FLAG_WRITE_THROUGH,
};

use crate::bypass::CacheBypass;

pub(super) fn open_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    match OpenOptions::new().read(true).custom_flags(FILE_FLAG_NO_BUFFERING).open(path) {
        Ok(file) => Ok((file, CacheBypass::NoBuffering)),
        Err(e) if e.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) => {
            let why = "the file system refuses FILE_FLAG_NO_BUFFERING";
            Ok((File::open(path)?, CacheBypass::Buffered { why }))
        }
        Err(e) => Err(e),
    }
}

pub(super) fn create_uncached(path: &Path) -> io::Result<(File, CacheBypass)> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    match options.clone().custom_flags(FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH).open(path) {
        Ok(file) => Ok((file, CacheBypass::NoBuffering)),
        Err(e) if e.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) => {
            let why = "the file system refuses FILE_FLAG_NO_BUFFERING";
            Ok((options.open(path)?, CacheBypass::Buffered { why }))
        }
        Err(e) => Err(e),
    }
}

/// Windows: writes stay buffered. `ReOpenFile` with `FILE_FLAG_NO_BUFFERING` would give the
/// second handle without the name; not built, as Wine cannot show that it bypasses anything.
pub(super) fn reopen_uncached_for_write(_file: &File) -> io::Result<(Option<File>, CacheBypass)> {
    Ok((None, CacheBypass::Buffered { why: "writes bypass the page cache only on Linux" }))
}

pub(super) fn drop_cached(_file: &File, _offset: u64, _len: u64) {}

pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buf, offset)
}

pub(super) fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    file.seek_write(buf, offset)
}

pub(super) fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

pub(super) fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

pub(super) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

pub(super) fn same_file(before: &Metadata, opened: &Metadata) -> bool {
    opened.len() == before.len() && opened.modified().ok() == before.modified().ok()
}

pub(super) fn special_kind(_file_type: FileType) -> &'static str {
    "special file"
}

pub(super) fn is_link_loop(_e: &io::Error) -> bool {
    false
}
