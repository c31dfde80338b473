//! [`read_tail`]: the end of the app's log file as entries, for Settings › Diagnostics' log
//! viewer (the file is written by the window's logging plugin, `[date][time][LEVEL][source]
//! message` a line, continuation lines joined to their entry).
//!
//! Must not: read more than the file's last 256 KiB.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most of the file's end the viewer reads.
const TAIL_BYTES: u64 = 256 * 1024;

/// One entry of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// `[date][time]` as written (UTC).
    pub time: String,
    /// ERROR, WARN, INFO, DEBUG or TRACE.
    pub level: String,
    /// The module that wrote it.
    pub source: String,
    pub message: String,
}

/// The end of the log, for the viewer.
#[derive(Debug, Clone, PartialEq)]
pub struct LogTail {
    pub path: String,
    /// Oldest first; at most the lines asked for.
    pub lines: Vec<LogLine>,
    /// Older entries exist beyond these.
    pub truncated: bool,
}

/// The last `max_lines` entries of `path` (an entry's continuation lines joined to it);
/// an absent file is an empty log.
pub fn read_tail(path: &Path, max_lines: usize) -> std::io::Result<LogTail> {
    let (text, cut) = match std::fs::File::open(path) {
        Ok(mut f) => {
            let len = f.metadata()?.len();
            let start = len.saturating_sub(TAIL_BYTES);
            f.seek(SeekFrom::Start(start))?;
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            (String::from_utf8_lossy(&bytes).into_owned(), start > 0)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), false),
        Err(e) => return Err(e),
    };
    let mut lines = parse(&text, cut);
    let truncated = cut || lines.len() > max_lines;
    lines.drain(..lines.len().saturating_sub(max_lines));
    Ok(LogTail { path: path.display().to_string(), lines, truncated })
}

/// Entries of the default format, `[date][time][source][LEVEL] message`; with `cut`, text
/// before the first whole line is dropped.
fn parse(text: &str, cut: bool) -> Vec<LogLine> {
    let mut out: Vec<LogLine> = Vec::new();
    let mut rest = text.lines();
    if cut {
        rest.next();
    }
    for line in rest {
        match (parse_head(line), out.last_mut()) {
            (Some(entry), _) => out.push(entry),
            (None, Some(last)) => {
                last.message.push('\n');
                last.message.push_str(line);
            }
            (None, None) => {}
        }
    }
    out
}

fn parse_head(line: &str) -> Option<LogLine> {
    let (head, message) = line.split_once("] ").or_else(|| line.strip_suffix(']').map(|h| (h, "")))?;
    let fields: Vec<&str> = head.strip_prefix('[')?.split("][").collect();
    let [date, time, source, level] = fields.as_slice() else { return None };
    let known = ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"];
    known.contains(level).then(|| LogLine {
        time: format!("{date} {time}"),
        level: level.to_string(),
        source: source.to_string(),
        message: message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_parsed_with_their_continuation_lines_and_only_the_last_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k3-desktop.log");
        assert_eq!(read_tail(&path, 10).unwrap().lines, vec![], "no file: an empty log");
        let text = "[2026-12-01][20:40:06][k3_desktop::worker][INFO] opened /m in 12 ms\n\
                    [2026-12-01][20:40:07][k3_runtime::worker][WARN] reply failed: disk\n  second line\n\
                    not a head and not after one? it is: joined\n\
                    [2026-12-01][20:40:08][k3_desktop::local_api][INFO] API on 127.0.0.1:8000\n";
        std::fs::write(&path, text).unwrap();
        let tail = read_tail(&path, 10).unwrap();
        assert_eq!(tail.lines.len(), 3);
        assert!(!tail.truncated);
        assert_eq!(tail.lines[0].time, "2026-12-01 20:40:06");
        assert_eq!(tail.lines[0].source, "k3_desktop::worker");
        assert_eq!(tail.lines[1].level, "WARN");
        assert_eq!(
            tail.lines[1].message,
            "reply failed: disk\n  second line\nnot a head and not after one? it is: joined"
        );
        let last = read_tail(&path, 1).unwrap();
        assert!(last.truncated);
        assert_eq!(last.lines[0].message, "API on 127.0.0.1:8000");
    }

    #[test]
    fn a_long_file_is_read_from_its_end_starting_at_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k3-desktop.log");
        let line = |i: usize| format!("[2026-12-01][20:00:00][k3_desktop][INFO] entry {i:06}\n");
        let text: String = (0..10_000).map(line).collect();
        std::fs::write(&path, &text).unwrap();
        let tail = read_tail(&path, 100_000).unwrap();
        assert!(tail.truncated);
        assert_eq!(tail.lines.last().unwrap().message, "entry 009999");
        assert!(tail.lines.iter().all(|l| l.message.starts_with("entry ")), "no half line at the cut");
        assert!(tail.lines.len() < 10_000 && tail.lines.len() as u64 >= TAIL_BYTES / line(0).len() as u64 - 1);
    }
}
