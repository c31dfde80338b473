//! Opening one shard: file checks, the length prefix, the header bytes.
//!
//! Owns: refusing anything but a regular file before reading from it (ST-20), the order of
//! the cheap size checks (ST-01..03) that all happen before any allocation, and reading
//! exactly `8 + N` bytes (never the data section).
//! Must not: read or map the data section; allocate the header before its length has
//! passed both the file-size and the cap checks.
//! Easy to break: symbolic links are followed (a Hugging Face cache snapshot is made of
//! them), so the regular-file test uses `metadata`, then the opened handle is re-checked
//! (`io::os::same_file`: the same device and inode on Unix) to catch a swap between the check and the open. Confining
//! links to the model store is the store's job, not the reader's.

use std::fs::{self, File, Metadata};
use std::path::Path;

use super::entry::HeaderEntry;
use super::fault::CheckpointFault;
use super::header::{parse_header, HEADER_CAP_BYTES, LEN_PREFIX_BYTES};
use super::remote::{data_start, header_len};
use crate::error::{Error, Result};

/// An opened shard with its validated header.
#[derive(Debug)]
pub(crate) struct OpenedShard {
    pub(crate) file: File,
    pub(crate) file_len: u64,
    /// File offset of the data section: `8 + N`.
    pub(crate) data_start: u64,
    pub(crate) entries: Vec<HeaderEntry>,
}

pub(crate) fn checkpoint_error(path: &Path, fault: CheckpointFault) -> Error {
    Error::Checkpoint { path: path.to_path_buf(), fault: Box::new(fault) }
}

/// Fails unless `meta` describes a regular file.
pub(crate) fn require_regular(path: &Path, meta: &Metadata) -> Result<()> {
    if meta.is_file() {
        Ok(())
    } else {
        let kind = crate::os::special_kind(meta.file_type());
        Err(checkpoint_error(path, CheckpointFault::NotRegularFile { kind }))
    }
}

/// Opens `path` for reading only if it is a regular file; returns it with its length.
/// Checking before opening means a FIFO is never opened (an open would block).
pub(crate) fn open_regular(path: &Path) -> Result<(File, u64)> {
    let before = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    require_regular(path, &before)?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let opened = file.metadata().map_err(|e| Error::io(path, e))?;
    if !opened.is_file() || !crate::os::same_file(&before, &opened) {
        return Err(checkpoint_error(path, CheckpointFault::ChangedWhileOpening));
    }
    Ok((file, opened.len()))
}

/// Opens and strictly validates one shard's header and layout.
pub(crate) fn open_shard(path: &Path) -> Result<OpenedShard> {
    let fail = |fault| checkpoint_error(path, fault);
    let (file, file_len) = open_regular(path)?;
    if file_len < LEN_PREFIX_BYTES {
        return Err(fail(CheckpointFault::TooSmall { file_len }));
    }
    let mut prefix = [0u8; 8];
    crate::os::read_exact_at(&file, &mut prefix, 0).map_err(|e| Error::io(path, e))?;
    let header_len = header_len(prefix, file_len).map_err(fail)?;
    let alloc_len = usize::try_from(header_len)
        .map_err(|_| fail(CheckpointFault::HeaderTooLarge { header_len, max: HEADER_CAP_BYTES }))?;
    let mut header = vec![0u8; alloc_len];
    crate::os::read_exact_at(&file, &mut header, LEN_PREFIX_BYTES).map_err(|e| Error::io(path, e))?;
    let entries = parse_header(&header, file_len).map_err(fail)?;
    Ok(OpenedShard { file, file_len, data_start: data_start(header_len), entries })
}
