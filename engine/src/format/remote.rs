//! Shard headers checked before the shard exists on disk: a download fetches the 8-byte
//! length prefix and the header by range reads and validates them with the same rules
//! as `open_shard`, so a bad shard is refused before its body is fetched.
//!
//! Owns: the two steps of that check ([`header_len`], [`check_header`]).
//! Must not: relax any rule of `header::parse_header`; duplicate names are found here with
//! the same `DuplicateKey` fault the folder index would report.

use std::collections::HashSet;

use super::fault::CheckpointFault;
use super::header::{parse_header, HEADER_CAP_BYTES, LEN_PREFIX_BYTES};

/// Bytes of the length prefix every shard starts with.
pub const PREFIX_BYTES: u64 = LEN_PREFIX_BYTES;

/// The header length the 8-byte `prefix` of a `file_len`-byte shard announces, checked
/// against the file size and the header cap.
pub fn header_len(prefix: [u8; 8], file_len: u64) -> Result<u64, CheckpointFault> {
    if file_len < LEN_PREFIX_BYTES {
        return Err(CheckpointFault::TooSmall { file_len });
    }
    let header_len = u64::from_le_bytes(prefix);
    if header_len > file_len.saturating_sub(LEN_PREFIX_BYTES) {
        return Err(CheckpointFault::HeaderPastEof { header_len, file_len });
    }
    if header_len > HEADER_CAP_BYTES {
        return Err(CheckpointFault::HeaderTooLarge { header_len, max: HEADER_CAP_BYTES });
    }
    Ok(header_len)
}

/// Validates the header bytes of a `file_len`-byte shard; returns its tensor count.
pub fn check_header(header: &[u8], file_len: u64) -> Result<usize, CheckpointFault> {
    let entries = parse_header(header, file_len)?;
    let mut seen = HashSet::with_capacity(entries.len());
    for entry in &entries {
        if !seen.insert(entry.name.as_str()) {
            return Err(CheckpointFault::DuplicateKey { name: entry.name.clone() });
        }
    }
    Ok(entries.len())
}
