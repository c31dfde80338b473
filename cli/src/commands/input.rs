//! What flags read from the file system: a folder that must exist, token ids given as
//! CSV, and bounded reads of regular files (never a device, a FIFO or a folder).

use std::path::Path;

use super::{input_error, Failure};

pub(super) fn require_dir(flag: &str, dir: &Path) -> Result<(), Failure> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(input_error(format!("{flag} {}: not a folder", dir.display())))
    }
}

/// Parses `1,2,3` for flag `flag`.
pub(super) fn parse_ids(flag: &str, csv: &str) -> Result<Vec<u32>, Failure> {
    csv.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().map_err(|_| input_error(format!("{flag}: `{s}` is not a token id"))))
        .collect()
}

/// The largest text file a flag reads (a full K3 context is well under 1 MB of text).
const MAX_TEXT_FILE_BYTES: u64 = 64 << 20;

/// The bytes of the regular file `path` for flag `flag`, refusing anything else (a device,
/// a FIFO, a folder: never opened, so a FIFO cannot hang) and a file larger than `max`
/// bytes before reading it all (probe finding: `--config /dev/zero` read 19.7 GB).
pub(super) fn read_regular(flag: &str, path: &Path, max: u64) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let fail = |e: std::io::Error| input_error(format!("{flag} {}: {e}", path.display()));
    if !std::fs::metadata(path).map_err(fail)?.is_file() {
        return Err(input_error(format!("{flag} {}: not a regular file", path.display())));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(fail)?.take(max + 1).read_to_end(&mut bytes).map_err(fail)?;
    if bytes.len() as u64 > max {
        return Err(input_error(format!("{flag} {}: larger than {} MiB", path.display(), max >> 20)));
    }
    Ok(bytes)
}

/// Reads a UTF-8 text file for flag `flag` (a regular file of at most 64 MiB).
pub(super) fn read_text(flag: &str, path: &Path) -> Result<String, Failure> {
    let bytes = read_regular(flag, path, MAX_TEXT_FILE_BYTES)?;
    String::from_utf8(bytes).map_err(|e| input_error(format!("{flag} {}: not UTF-8 ({e})", path.display())))
}
