//! What the history file and its write-ahead log look like from outside SQLite: file
//! type, size, and the fixed fields of the database header and the WAL header.
//!
//! Owns: [`Damage`], every reason the app gives for setting a history file aside, and the
//! checks that need no SQLite (`check_main`, `wal_header`), run before any connection
//! touches the file.
//! Must not: write anything; deciding what to do with a damaged file is `startup.rs`'s.
//! Easy to break: a crash must never look like damage. The in-header page count may run
//! ahead of the file while a checkpoint is interrupted — the WAL still holds those pages —
//! so it is only compared with the file's size when there is no WAL.

use std::fs::Metadata;
use std::io::Read;
use std::path::Path;

/// The first 16 bytes of every SQLite 3 database.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Length of the database header.
const HEADER_LEN: usize = 100;
/// Length of the WAL header.
const WAL_HEADER_LEN: usize = 32;
const WAL_MAGIC_LE: u32 = 0x377f_0682;
const WAL_MAGIC_BE: u32 = 0x377f_0683;
const WAL_VERSION: u32 = 3_007_000;

/// Why a history file cannot be used as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// The database file is gone but its WAL or journal is still there.
    Orphaned,
    /// A directory, socket or other non-file where the database should be.
    NotAFile,
    /// Zero bytes long.
    Empty,
    /// Shorter than the 100-byte header.
    ShortHeader { len: u64 },
    /// Does not start with the SQLite magic: not a database at all.
    NotSqlite,
    /// A header field no SQLite would write.
    BadHeader { field: &'static str, value: u32 },
    /// The size is not a whole number of pages.
    PartialPage { len: u64, page_size: u32 },
    /// The header counts more pages than the file holds (and no WAL holds them).
    Truncated { len: u64, expected: u64 },
    /// SQLite refused the file (`file is not a database`, `malformed`).
    Refused { reason: String },
    /// `PRAGMA integrity_check` found problems; the first one and how many.
    Integrity { first: String, problems: usize },
    /// A valid SQLite file whose tables are not those of this schema version.
    ForeignSchema { version: i64 },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Orphaned => write!(f, "the database file is missing but its journal files remain"),
            Damage::NotAFile => write!(f, "it is not a regular file"),
            Damage::Empty => write!(f, "it is empty (0 bytes)"),
            Damage::ShortHeader { len } => write!(f, "it is {len} bytes long, shorter than a database header"),
            Damage::NotSqlite => write!(f, "it is not an SQLite database (wrong header)"),
            Damage::BadHeader { field, value } => write!(f, "its header has an impossible {field} ({value})"),
            Damage::PartialPage { len, page_size } => {
                write!(f, "it is {len} bytes long, not a whole number of {page_size}-byte pages (cut short)")
            }
            Damage::Truncated { len, expected } => {
                write!(f, "it is {len} bytes long but its header says {expected} (cut short)")
            }
            Damage::Refused { reason } => write!(f, "SQLite cannot read it ({reason})"),
            Damage::Integrity { first, problems } => {
                write!(f, "the integrity check found {problems} problem(s), first: {first}")
            }
            Damage::ForeignSchema { version } => {
                write!(f, "its tables are not those of a chat history (schema version {version})")
            }
        }
    }
}

/// What the main file's bytes say before SQLite opens it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCheck {
    Missing,
    Plausible,
    Damaged(Damage),
}

/// Checks type, size and header of the database at `path`; `wal_has_pages` says whether a
/// valid WAL beside it may hold pages the main file does not have yet.
pub fn check_main(path: &Path, wal_has_pages: bool) -> std::io::Result<FileCheck> {
    // Followed: a history the user moved elsewhere and linked back is theirs to keep.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileCheck::Missing),
        Err(e) => return Err(e),
    };
    if !meta.is_file() {
        return Ok(FileCheck::Damaged(Damage::NotAFile));
    }
    let header = read_prefix(path, HEADER_LEN)?;
    Ok(match header_damage(&meta, &header, wal_has_pages) {
        Some(d) => FileCheck::Damaged(d),
        None => FileCheck::Plausible,
    })
}

fn read_prefix(path: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    std::fs::File::open(path)?.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

fn be16(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 2) {
        Some(&[x, y]) => u32::from(u16::from_be_bytes([x, y])),
        _ => 0,
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(&[w, x, y, z]) => u32::from_be_bytes([w, x, y, z]),
        _ => 0,
    }
}

fn header_damage(meta: &Metadata, h: &[u8], wal_has_pages: bool) -> Option<Damage> {
    let len = meta.len();
    if len == 0 {
        return Some(Damage::Empty);
    }
    if h.len() < HEADER_LEN {
        return Some(Damage::ShortHeader { len });
    }
    if h.get(..16) != Some(MAGIC.as_slice()) {
        return Some(Damage::NotSqlite);
    }
    let page_size = match be16(h, 16) {
        1 => 65_536,
        p if (512..=32_768).contains(&p) && p.is_power_of_two() => p,
        p => return Some(Damage::BadHeader { field: "page size", value: p }),
    };
    if let Some(d) = field_damage(h) {
        return Some(d);
    }
    let pages = be32(h, 28);
    let counted = pages != 0 && be32(h, 24) == be32(h, 92);
    let expected = u64::from(pages) * u64::from(page_size);
    // A part page is a write that never finished: a checkpoint stopped by a full disk or
    // a power cut. Past the pages the header counts, SQLite reads no further than the
    // count and trims the file at its next checkpoint. Within them, a sound WAL still holds
    // the page and SQLite's next checkpoint writes it whole; `integrity_check` decides.
    let whole = len - len % u64::from(page_size);
    if whole != len && !(counted && expected <= whole) && !wal_has_pages {
        return Some(Damage::PartialPage { len, page_size });
    }
    (counted && !wal_has_pages && expected > len).then_some(Damage::Truncated { len, expected })
}

/// The fixed-value fields of the header (file format versions, payload fractions).
fn field_damage(h: &[u8]) -> Option<Damage> {
    let fixed: [(&'static str, usize, &[u8]); 5] = [
        ("write version", 18, &[1, 2]),
        ("read version", 19, &[1, 2]),
        ("maximum payload fraction", 21, &[64]),
        ("minimum payload fraction", 22, &[32]),
        ("leaf payload fraction", 23, &[32]),
    ];
    fixed.into_iter().find_map(|(field, at, allowed)| {
        let value = h.get(at).copied().unwrap_or(0);
        (!allowed.contains(&value)).then_some(Damage::BadHeader { field, value: u32::from(value) })
    })
}

/// The end of a WAL's first frame at the smallest page size: a WAL shorter holds no frame.
const SMALLEST_FRAME_END: u64 = WAL_HEADER_LEN as u64 + 24 + 512;

/// What the start of a WAL holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalHeader {
    /// A header SQLite accepts (magic, version, page size, checksum).
    Sound,
    /// Holds no frame: too short for one (a header, a frame header and the smallest page),
    /// or its header all zero. A full disk or a power cut during the WAL's first write
    /// leaves this; SQLite ignores it and writes over it, and there is nothing in it to keep.
    Unwritten,
    /// Anything else. SQLite ignores a WAL whose header fails, and then overwrites it.
    Bad,
}

/// The state of the WAL header at `path`.
pub fn wal_header(path: &Path) -> std::io::Result<WalHeader> {
    let h = read_prefix(path, WAL_HEADER_LEN)?;
    let len = std::fs::metadata(path)?.len();
    if len < SMALLEST_FRAME_END || h.iter().all(|&b| b == 0) {
        return Ok(WalHeader::Unwritten);
    }
    let magic = be32(&h, 0);
    let big_endian = match magic {
        WAL_MAGIC_BE => true,
        WAL_MAGIC_LE => false,
        _ => return Ok(WalHeader::Bad),
    };
    let page_size = be32(&h, 8);
    let page_ok = (512..=65_536).contains(&page_size) && page_size.is_power_of_two();
    let sum = wal_checksum(h.get(..24).unwrap_or_default(), big_endian);
    let sound = be32(&h, 4) == WAL_VERSION && page_ok && sum == (be32(&h, 24), be32(&h, 28));
    Ok(if sound { WalHeader::Sound } else { WalHeader::Bad })
}

/// SQLite's WAL checksum over `data` (a multiple of 8 bytes), words read in the order the
/// magic number names.
fn wal_checksum(data: &[u8], big_endian: bool) -> (u32, u32) {
    let word = |c: &[u8]| match *c {
        [a, b, c, d] if big_endian => u32::from_be_bytes([a, b, c, d]),
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    };
    data.chunks_exact(8).fold((0u32, 0u32), |(s0, s1), pair| {
        let s0 = s0.wrapping_add(word(&pair[..4])).wrapping_add(s1);
        let s1 = s1.wrapping_add(word(&pair[4..])).wrapping_add(s0);
        (s0, s1)
    })
}
