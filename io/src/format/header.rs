//! The safetensors header: bytes in, validated tensor entries out (no I/O).
//!
//! Owns: the strict reading of `[u64 N][N bytes JSON][data]` once the N header bytes and the
//! file length are known: text policy (no BOM, no leading whitespace, only 0x20 after `}`),
//! the streaming top-level visitor (entries are judged in `entry`), duplicate names, and the
//! layout of the data section (starts at 0, no holes, no overlaps, ends exactly at EOF).
//! Must not: allocate in proportion to a number it has not checked, use unchecked
//! arithmetic, or assume the data section is aligned.
//! Easy to break: zero-size tensors may share an offset with a neighbour (ST-17) but must
//! not sit strictly inside another tensor's bytes; the sort order `(begin, end)` is what
//! makes the single-cursor walk in `check_layout` correct. Duplicate names (ST-06) are
//! split with `index`: see `parse_header`.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::entry::{validate_entry, EntryProbe, HeaderEntry, MetadataProbe};
use super::fault::CheckpointFault;
use super::json_probe::{abort, json_syntax};
use super::names::check_tensor_name;

/// Largest header the reader accepts (ST-03). The real shards' headers are under 1 MiB.
pub(crate) const HEADER_CAP_BYTES: u64 = 16 << 20;
/// A header up to this size is accepted whatever share of its file it is (a small test
/// checkpoint's headers are a few KiB of names over a few hundred KiB of data, 0.1–4 %).
pub(crate) const HEADER_FLOOR_BYTES: u64 = 1 << 20;

/// The largest header a `file_len`-byte shard may have (ST-03): 1 % of the file, at
/// least [`HEADER_FLOOR_BYTES`], never more than [`HEADER_CAP_BYTES`]. The real shards
/// (92 MB to 17 GB) have headers far below 1 %; a header that is most of its file is a
/// hostile one.
pub(crate) fn header_limit(file_len: u64) -> u64 {
    (file_len / 100).clamp(HEADER_FLOOR_BYTES, HEADER_CAP_BYTES)
}
/// Bytes before the header: the little-endian u64 length.
pub(crate) const LEN_PREFIX_BYTES: u64 = 8;

const METADATA_KEY: &str = "__metadata__";

/// Validates a whole header. `header` is the N bytes after the length prefix and
/// `file_len` the shard's size; on success the entries are sorted by `(begin, end)`.
///
/// A name repeated within the header is reported here only when the layout is also wrong;
/// otherwise the caller's `TensorTable::insert` finds it (saving a second hash of every
/// name) and must report it as `DuplicateKey`.
pub(crate) fn parse_header(header: &[u8], file_len: u64) -> Result<Vec<HeaderEntry>, CheckpointFault> {
    let header_len = u64::try_from(header.len()).map_err(|_| overflow("", "header length"))?;
    let data_start = LEN_PREFIX_BYTES.checked_add(header_len).ok_or_else(|| overflow("", "data section start"))?;
    let json = header_text(header)?;
    let mut fault = None;
    let mut de = serde_json::Deserializer::from_str(json);
    let entries = match (HeaderVisitor { fault: &mut fault, data_start }).deserialize(&mut de) {
        Ok(entries) => entries,
        Err(err) => return Err(fault.unwrap_or_else(|| json_syntax(&err))),
    };
    if let Err(err) = de.end() {
        // Something after a closing `}` that is not the last byte: find the first junk byte.
        return Err(trailing_junk(header).unwrap_or_else(|| json_syntax(&err)));
    }
    let mut entries = entries;
    if let Err(fault) = check_layout(&mut entries, data_start, file_len) {
        // A repeated name is the likelier root cause of a layout fault; name it first.
        check_duplicates(&entries)?;
        return Err(fault);
    }
    Ok(entries)
}

/// Applies the text policy and returns the JSON text without its space padding.
fn header_text(header: &[u8]) -> Result<&str, CheckpointFault> {
    let Some(&first) = header.first() else {
        return Err(CheckpointFault::HeaderEmpty);
    };
    if header.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(CheckpointFault::ByteOrderMark);
    }
    if matches!(first, b' ' | b'\t' | b'\n' | b'\r') {
        return Err(CheckpointFault::LeadingWhitespace { byte: first });
    }
    if first != b'{' {
        return Err(CheckpointFault::NotAnObject { first_byte: first });
    }
    let text =
        std::str::from_utf8(header).map_err(|e| CheckpointFault::NotUtf8 { offset: file_offset(e.valid_up_to()) })?;
    // Fast path: strip the 0x20 padding; the object must then end the text.
    let end = header.iter().rposition(|&b| b != b' ').map_or(0, |i| i.saturating_add(1));
    if header.get(end.saturating_sub(1)) != Some(&b'}') {
        if let Some(fault) = trailing_junk(header) {
            return Err(fault);
        }
        // Unbalanced: let serde report where the JSON runs out.
    }
    // Only spaces (or nothing) follow `end`, so it is a char boundary.
    Ok(text.get(..end).unwrap_or(text))
}

/// `TrailingJunk` at the first byte after the top-level object that is not a space, if the
/// object is balanced and such a byte exists.
fn trailing_junk(header: &[u8]) -> Option<CheckpointFault> {
    let end = object_end(header)?;
    let padding = header.get(end..)?;
    let (i, &byte) = padding.iter().enumerate().find(|&(_, &b)| b != b' ')?;
    Some(CheckpointFault::TrailingJunk { offset: file_offset(end.saturating_add(i)), byte })
}

/// File offset of header byte `i`.
fn file_offset(i: usize) -> u64 {
    u64::try_from(i).unwrap_or(u64::MAX).saturating_add(LEN_PREFIX_BYTES)
}

/// Index just past the `}` closing the object that opens at byte 0, if it is balanced.
/// String-aware; `"` and `\` never occur inside multi-byte UTF-8 sequences.
fn object_end(bytes: &[u8]) -> Option<usize> {
    let mut depth: usize = 0;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth = depth.checked_add(1)?,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return i.checked_add(1);
                }
            }
            _ => {}
        }
    }
    None
}

fn overflow(name: &str, what: &'static str) -> CheckpointFault {
    CheckpointFault::Overflow { name: name.to_owned(), what }
}

/// ST-06: serde_json would silently keep the last of two equal keys; we refuse.
/// (Only on the error path; see `parse_header`.)
fn check_duplicates(entries: &[HeaderEntry]) -> Result<(), CheckpointFault> {
    let mut seen = HashSet::with_capacity(entries.len());
    for entry in entries {
        if !seen.insert(entry.name.as_str()) {
            return Err(CheckpointFault::DuplicateKey { name: entry.name.clone() });
        }
    }
    Ok(())
}

/// ST-08/09: the tensors tile `0..max_end` exactly and the file ends at `data_start + max_end`.
fn check_layout(entries: &mut [HeaderEntry], data_start: u64, file_len: u64) -> Result<(), CheckpointFault> {
    entries.sort_unstable_by_key(|e| (e.begin, e.end));
    let mut cursor: u64 = 0;
    // The tensor whose end is `cursor` (None while nothing non-empty has been seen).
    let mut owner: Option<&HeaderEntry> = None;
    for entry in entries.iter() {
        if entry.begin < cursor {
            return Err(CheckpointFault::Overlap {
                first: owner.map(|o| o.name.clone()).unwrap_or_default(),
                second: entry.name.clone(),
                first_end: cursor,
                second_begin: entry.begin,
            });
        }
        if entry.begin > cursor {
            return Err(match owner {
                None => CheckpointFault::FirstNotAtZero { name: entry.name.clone(), begin: entry.begin },
                Some(before) => CheckpointFault::Hole {
                    before: before.name.clone(),
                    after: entry.name.clone(),
                    start: cursor,
                    end: entry.begin,
                },
            });
        }
        if entry.end > cursor {
            cursor = entry.end;
            owner = Some(entry);
        }
    }
    let expected_len = data_start
        .checked_add(cursor)
        .ok_or_else(|| overflow(owner.map_or("", |o| o.name.as_str()), "absolute end offset"))?;
    match file_len.cmp(&expected_len) {
        std::cmp::Ordering::Less => Err(CheckpointFault::Truncated { expected_len, file_len }),
        std::cmp::Ordering::Greater => Err(CheckpointFault::TrailingBytes { expected_len, file_len }),
        std::cmp::Ordering::Equal => Ok(()),
    }
}

/// Streams the top-level object: validates each name and entry as it arrives and stops at
/// the first fault.
struct HeaderVisitor<'f> {
    fault: &'f mut Option<CheckpointFault>,
    data_start: u64,
}

impl<'de> DeserializeSeed<'de> for HeaderVisitor<'_> {
    type Value = Vec<HeaderEntry>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeaderVisitor<'_> {
    type Value = Vec<HeaderEntry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of tensor entries")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        let mut saw_metadata = false;
        while let Some(name) = map.next_key::<String>()? {
            if name == METADATA_KEY {
                if saw_metadata {
                    return abort(self.fault, CheckpointFault::DuplicateKey { name });
                }
                saw_metadata = true;
                let MetadataProbe(checked) = map.next_value()?;
                if let Err(fault) = checked {
                    return abort(self.fault, fault);
                }
                continue;
            }
            if let Err(fault) = check_tensor_name(&name) {
                return abort(self.fault, fault);
            }
            let probe: EntryProbe = map.next_value()?;
            match validate_entry(name, probe, self.data_start) {
                Ok(entry) => entries.push(entry),
                Err(fault) => return abort(self.fault, fault),
            }
        }
        Ok(entries)
    }
}
