//! Setting a damaged history aside: the database and its sidecars are renamed, never
//! copied over, truncated or deleted, to names that say what they are and when.
//!
//! Owns: the names (`chats.sqlite.damaged-20250101T120000Z`, its `-wal`, `-shm` and
//! `-journal` beside it, so SQLite or a recovery tool opens the set as it was), the
//! renames and the folder `fsync` that makes them durable.
//! Must not: decide whether a file is damaged (`header.rs`, `startup.rs` do).
//! Easy to break: the WAL holds committed transactions the main file may not have yet;
//! moving the main file without it would lose them, so the whole set moves together.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The suffixes SQLite gives a database's sidecar files.
pub const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// `path` with `suffix` appended to its file name.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Renames the database at `path` and each sidecar present to `<name>.<tag>-<time>` (plus
/// the sidecar's suffix); returns the new paths, the database first when it existed.
pub fn set_aside(path: &Path, tag: &str) -> std::io::Result<Vec<PathBuf>> {
    let target = free_name(path, tag, &[""].into_iter().chain(SIDECARS).collect::<Vec<_>>());
    let mut moved = Vec::new();
    for suffix in [""].into_iter().chain(SIDECARS) {
        let from = with_suffix(path, suffix);
        if std::fs::symlink_metadata(&from).is_ok() {
            let to = with_suffix(&target, suffix);
            std::fs::rename(&from, &to)?;
            moved.push(to);
        }
    }
    sync_folder(path)?;
    Ok(moved)
}

/// Renames the one file `path` (a leftover sidecar) to `<name>.<tag>-<time>`.
pub fn set_file_aside(path: &Path, tag: &str) -> std::io::Result<PathBuf> {
    let to = free_name(path, tag, &[""]);
    std::fs::rename(path, &to)?;
    sync_folder(path)?;
    Ok(to)
}

/// `<path>.<tag>-<UTC time>`, with `-2`, `-3`… added until no name with any of
/// `suffixes` exists.
fn free_name(path: &Path, tag: &str, suffixes: &[&str]) -> PathBuf {
    let base = with_suffix(path, &format!(".{tag}-{}", utc_stamp(SystemTime::now())));
    let taken = |p: &Path| suffixes.iter().any(|s| std::fs::symlink_metadata(with_suffix(p, s)).is_ok());
    let mut candidate = base.clone();
    let mut n = 2u32;
    while taken(&candidate) {
        candidate = with_suffix(&base, &format!("-{n}"));
        n = n.saturating_add(1);
    }
    candidate
}

/// Makes renames and creations in `path`'s folder durable.
pub fn sync_folder(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => k3_io::os::sync_dir(dir),
        None => k3_io::os::sync_dir(Path::new(".")),
    }
}

/// `time` as `YYYYMMDDTHHMMSSZ` (UTC), the form used in the names of files set aside.
pub fn utc_stamp(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_date(days);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (the days-from-civil inverse, in
/// 400-year eras of 146,097 days).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps_are_utc_calendar_times() {
        let at = |s: u64| utc_stamp(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(951_782_400), "20000229T000000Z");
        assert_eq!(at(1_735_732_800 + 3_661), "20250101T130101Z");
        assert_eq!(at(4_107_542_399), "21000228T235959Z", "2100 is not a leap year");
    }
}
