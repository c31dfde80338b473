//! Shard headers checked before the shard exists on disk: a download fetches the 8-byte
//! length prefix and the header by range reads and validates them with the same rules
//! as `open_shard`, so a bad shard is refused before its body is fetched.
//!
//! Owns: the two steps of that check ([`header_len`], [`check_header`]), and
//! [`header_tensors`], the same check returning the tensor table (what `open_shard` and
//! `TensorIndex::from_heads` build on, and what the fuzz targets inspect).
//! Must not: relax any rule of `header::parse_header`; duplicate names are found here with
//! the same `DuplicateKey` fault the folder index would report.

use std::collections::HashSet;

use super::entry::HeaderEntry;
use super::fault::CheckpointFault;
use super::header::{header_limit, parse_header, LEN_PREFIX_BYTES};
use super::tensor::TensorInfo;

/// Bytes of the length prefix every shard starts with.
pub const PREFIX_BYTES: u64 = LEN_PREFIX_BYTES;

/// The header length the 8-byte `prefix` of a `file_len`-byte shard announces, checked
/// against the file size and the header limit for that size (`header::header_limit`).
pub fn header_len(prefix: [u8; 8], file_len: u64) -> Result<u64, CheckpointFault> {
    if file_len < LEN_PREFIX_BYTES {
        return Err(CheckpointFault::TooSmall { file_len });
    }
    let header_len = u64::from_le_bytes(prefix);
    if header_len > file_len.saturating_sub(LEN_PREFIX_BYTES) {
        return Err(CheckpointFault::HeaderPastEof { header_len, file_len });
    }
    let max = header_limit(file_len);
    if header_len > max {
        return Err(CheckpointFault::HeaderTooLarge { header_len, max });
    }
    Ok(header_len)
}

/// Validates the header bytes of a `file_len`-byte shard; returns its tensor count.
pub fn check_header(header: &[u8], file_len: u64) -> Result<usize, CheckpointFault> {
    header_tensors(header, file_len).map(|tensors| tensors.len())
}

/// Validates the header bytes (the N bytes the length prefix announces) of a `file_len`-byte
/// shard and returns its tensors as shard 0, with absolute file offsets, ordered by offset.
pub fn header_tensors(header: &[u8], file_len: u64) -> Result<Vec<TensorInfo>, CheckpointFault> {
    let entries = parse_header(header, file_len)?;
    let mut seen = HashSet::with_capacity(entries.len());
    for entry in &entries {
        if !seen.insert(entry.name.as_str()) {
            return Err(CheckpointFault::DuplicateKey { name: entry.name.clone() });
        }
    }
    drop(seen);
    let header_len = u64::try_from(header.len()).unwrap_or(u64::MAX);
    Ok(tensor_infos(0, data_start(header_len), entries).collect())
}

/// File offset of the data section of a shard whose header is `header_len` bytes.
pub(crate) fn data_start(header_len: u64) -> u64 {
    // A checked header length fits the file, so this does not saturate in practice.
    LEN_PREFIX_BYTES.saturating_add(header_len)
}

/// The entries of shard `shard_idx` as `TensorInfo`s; `parse_header` checked that
/// `data_start + end` fits in a u64.
pub(crate) fn tensor_infos(
    shard_idx: usize,
    data_start: u64,
    entries: Vec<HeaderEntry>,
) -> impl ExactSizeIterator<Item = TensorInfo> {
    entries.into_iter().map(move |entry| TensorInfo {
        name: entry.name,
        dtype: entry.dtype,
        shape: entry.shape,
        shard_idx,
        offset: data_start.saturating_add(entry.begin),
        nbytes: entry.end.saturating_sub(entry.begin),
    })
}
