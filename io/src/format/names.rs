//! Rules for names: tensor names in headers, shard file names in the index, and the
//! `PREFIX-NNNNN-of-MMMMMM.safetensors` numbering of the shard files.
//!
//! Owns: what a tensor name may contain (ST-07), what a file name from `weight_map` may be
//! (IX-01), case-insensitive collisions between tensor names, and the completeness of a
//! numbered shard set (IX-03).
//! Must not: touch the file system; callers pass names in.
//! Easy to break: no Unicode normalisation (NFC) is done, so names that differ only in
//! normal form are not reported as colliding; only letter case is folded
//! (`str::to_lowercase`).

use std::collections::{BTreeMap, HashMap};

use super::fault::CheckpointFault;

/// Longest tensor name accepted, in bytes (ST-07).
pub(crate) const MAX_NAME_BYTES: usize = 1024;
/// Characters of an over-long name kept in the fault.
const NAME_PREFIX_CHARS: usize = 64;

/// ST-07: non-empty, at most 1 KiB, no control characters, nothing path-like.
pub(crate) fn check_tensor_name(name: &str) -> Result<(), CheckpointFault> {
    if name.is_empty() {
        return Err(CheckpointFault::NameEmpty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(CheckpointFault::NameTooLong {
            prefix: name.chars().take(NAME_PREFIX_CHARS).collect(),
            len: name.len(),
            max: MAX_NAME_BYTES,
        });
    }
    // One pass; a control character is reported in preference to a path-like one.
    let mut path_like = false;
    let mut prev = '\0';
    for c in name.chars() {
        if c.is_control() {
            return Err(CheckpointFault::NameControlChar { name: name.to_owned(), code: u32::from(c) });
        }
        path_like |= c == '/' || c == '\\' || (c == '.' && prev == '.');
        prev = c;
    }
    if path_like {
        return Err(CheckpointFault::NamePathLike { name: name.to_owned() });
    }
    Ok(())
}

/// `name` lower-cased, or None if lower-casing leaves it unchanged.
pub(crate) fn lowercase_if_changed(name: &str) -> Option<String> {
    if name.is_ascii() {
        return name.bytes().any(|b| b.is_ascii_uppercase()).then(|| name.to_ascii_lowercase());
    }
    let lower = name.to_lowercase();
    (lower != name).then_some(lower)
}

/// IX-01: a `weight_map` file name must be a plain file name, portable to Windows.
/// Returns the rule it breaks.
pub(crate) fn check_shard_file_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.contains('\0') {
        return Err("NUL byte");
    }
    if name.chars().any(char::is_control) {
        return Err("control character");
    }
    if name.contains('/') {
        return Err("path separator `/` (absolute or nested path)");
    }
    if name.contains('\\') {
        return Err("path separator `\\` (Windows or UNC path)");
    }
    if name.contains(':') {
        return Err("`:` (drive letter or alternate data stream)");
    }
    if name.contains("..") || name == "." {
        return Err("`.` or `..` component");
    }
    if name.contains(['<', '>', '"', '|', '?', '*']) {
        return Err("character not allowed in Windows file names");
    }
    if name.ends_with(['.', ' ']) {
        return Err("trailing dot or space (stripped by Windows)");
    }
    let stem = name.split('.').next().unwrap_or(name).trim_end();
    if is_windows_device(stem) {
        return Err("reserved Windows device name");
    }
    Ok(())
}

fn is_windows_device(stem: &str) -> bool {
    let upper = stem.to_ascii_uppercase();
    if matches!(upper.as_str(), "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$") {
        return true;
    }
    let tail = upper.strip_prefix("COM").or_else(|| upper.strip_prefix("LPT"));
    matches!(tail, Some("0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "¹" | "²" | "³"))
}

/// `PREFIX-<index>-of-<total>.safetensors`, as parsed from a shard file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardNumber<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) index: u64,
    pub(crate) total: u64,
}

/// Parses the numbering out of a shard file name, if it has one.
pub(crate) fn parse_shard_number(file_name: &str) -> Option<ShardNumber<'_>> {
    let stem = file_name.strip_suffix(".safetensors")?;
    let (head, total) = stem.rsplit_once("-of-")?;
    let (prefix, index) = head.rsplit_once('-')?;
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    Some(ShardNumber { prefix, index: number(index)?, total: number(total)? })
}

/// Where a numbering fault belongs: a shard (by position in `names`) or the whole folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultSite {
    Shard(usize),
    Folder,
}

/// IX-03: for each prefix, the numbered shards agree on the total and are exactly 1..=total.
/// `names` are the shard file names (None when not UTF-8; those are not numbered).
pub(crate) fn check_shard_numbering(names: &[Option<&str>]) -> Result<(), (FaultSite, CheckpointFault)> {
    let mut groups: BTreeMap<&str, Vec<(usize, &str, ShardNumber<'_>)>> = BTreeMap::new();
    for (pos, name) in names.iter().enumerate() {
        if let Some(num) = name.and_then(parse_shard_number) {
            let file = name.unwrap_or_default();
            groups.entry(num.prefix).or_default().push((pos, file, num));
        }
    }
    for members in groups.values() {
        let Some(&(_, first_file, first)) = members.first() else {
            continue;
        };
        let mut by_index: HashMap<u64, &str> = HashMap::new();
        for &(pos, file, num) in members {
            let at = FaultSite::Shard(pos);
            if num.total != first.total {
                let fault = CheckpointFault::ShardTotalMismatch {
                    file: first_file.to_owned(),
                    total: first.total,
                    other_file: file.to_owned(),
                    other_total: num.total,
                };
                return Err((at, fault));
            }
            if num.index == 0 || num.index > num.total {
                let fault = CheckpointFault::ShardNumberOutOfRange { index: num.index, total: num.total };
                return Err((at, fault));
            }
            if let Some(other) = by_index.insert(num.index, file) {
                let fault = CheckpointFault::ShardNumberDuplicate { index: num.index, other_file: other.to_owned() };
                return Err((at, fault));
            }
        }
        let found = u64::try_from(members.len()).unwrap_or(u64::MAX);
        if found != first.total {
            let fault = CheckpointFault::ShardCountMismatch { total: first.total, found };
            return Err((FaultSite::Folder, fault));
        }
    }
    Ok(())
}
