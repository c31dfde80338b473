//! The queue's journal: `queue.jsonl` in the queue's folder, one event per line, each
//! appended and synced before it counts. Replaying the lines gives the queue as the last
//! run left it.
//!
//! Owns: the record types ([`QueueItem`], [`Outcome`], [`Event`]), the format's version,
//! [`Journal`] (append, replay, compaction).
//! Must not: count an event whose line is not synced; lose a line it cannot read. A line
//! from a newer app, or one that is not a record, refuses the whole file by name and leaves
//! it as it is; only a torn last line (a crash mid-append, no newline yet) is dropped, the
//! file cut back to its last whole line.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::QueueError;

/// The journal's file name in the queue's folder.
pub const JOURNAL_FILE: &str = "queue.jsonl";
/// The format this app writes (each line's `v`).
pub const JOURNAL_VERSION: u32 = 1;
/// Lines beyond the live ones (removed items, pause toggles) that make opening rewrite the file.
const COMPACT_SLACK: usize = 256;

/// How an item is sampled: the new-chat settings when it was added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemSettings {
    /// 0: greedy.
    pub temperature: f32,
    pub top_p: f32,
    pub max_tokens: u32,
    pub thinking: bool,
}

/// One prompt of the queue, as added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueItem {
    pub id: u64,
    /// The name the user gave it (an imported `id` or `custom_id`), else its number.
    pub label: String,
    pub prompt: String,
    pub system: Option<String>,
    pub settings: ItemSettings,
    /// Drawn when the item was added, so a resumed item samples the tokens it would have.
    pub seed: u64,
    /// Seconds since the Unix epoch.
    pub added_at: u64,
}

/// How a finished item ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Answered (to its end, its token limit or the context's end: `finish` says which).
    Done,
    /// The engine refused it (the reason is the outcome's `error`).
    Failed,
    /// The user cancelled it; what it had written is kept.
    Cancelled,
}

/// A finished item's answer and figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    pub text: String,
    pub think: Option<String>,
    /// `stop`, `length`, `context_full` or `cancelled`; `None` when it failed.
    pub finish: Option<String>,
    pub error: Option<String>,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// From the engine taking it to its end.
    pub seconds: f64,
    /// Seconds since the Unix epoch.
    pub finished_at: u64,
}

/// One journal line's event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Add {
        item: QueueItem,
    },
    Finish {
        id: u64,
        outcome: Outcome,
    },
    /// The user cleared a finished item from the list.
    Remove {
        id: u64,
    },
    Pause,
    Resume,
}

#[derive(Serialize, Deserialize)]
struct Line {
    v: u32,
    #[serde(flatten)]
    event: Event,
}

/// The open journal, appended to.
pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Opens (creating) the journal in `dir` and reads its events, cutting off a torn last line.
    pub fn open(dir: &Path) -> Result<(Journal, Vec<Event>), QueueError> {
        let path = dir.join(JOURNAL_FILE);
        let io_err = |source: io::Error| QueueError::Io { path: path.clone(), source };
        std::fs::create_dir_all(dir).map_err(|source| QueueError::Io { path: dir.to_path_buf(), source })?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_err(e)),
        };
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let events = parse(&path, &bytes[..whole])?;
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(io_err)?;
        if whole < bytes.len() {
            log::warn!("{}: dropping a torn last line ({} bytes)", path.display(), bytes.len() - whole);
            file.set_len(whole as u64).and_then(|()| file.sync_data()).map_err(io_err)?;
        }
        Ok((Journal { path, file }, events))
    }

    /// Appends `event` and syncs it: once this returns, the event survives a crash.
    pub fn append(&mut self, event: &Event) -> Result<(), QueueError> {
        let mut line = serde_json::to_vec(&Line { v: JOURNAL_VERSION, event: event.clone() })
            .map_err(|e| QueueError::Io { path: self.path.clone(), source: io::Error::other(e) })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .map_err(|source| QueueError::Io { path: self.path.clone(), source })
    }

    /// Rewrites the file as `live` (the events that rebuild the queue) when the file holds
    /// more than [`COMPACT_SLACK`] other lines: written beside it, synced, renamed over it.
    pub fn compact(&mut self, read: usize, live: &[Event]) -> Result<(), QueueError> {
        if read <= live.len() + COMPACT_SLACK {
            return Ok(());
        }
        let io_err = |source: io::Error| QueueError::Io { path: self.path.clone(), source };
        let tmp = self.path.with_extension("jsonl.tmp");
        let mut text = Vec::new();
        for event in live {
            serde_json::to_writer(&mut text, &Line { v: JOURNAL_VERSION, event: event.clone() })
                .map_err(|e| io_err(io::Error::other(e)))?;
            text.push(b'\n');
        }
        let mut out = File::create(&tmp).map_err(io_err)?;
        out.write_all(&text).and_then(|()| out.sync_all()).map_err(io_err)?;
        std::fs::rename(&tmp, &self.path).map_err(io_err)?;
        if let Some(dir) = self.path.parent() {
            k3_io::os::sync_dir(dir).map_err(io_err)?;
        }
        self.file = OpenOptions::new().append(true).open(&self.path).map_err(io_err)?;
        Ok(())
    }
}

/// The events of the journal's whole lines; a line that is not one is named.
fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Event>, QueueError> {
    let mut events = Vec::new();
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let bad = |reason: String| QueueError::Journal { path: path.to_path_buf(), line: n + 1, reason };
        let value: serde_json::Value = serde_json::from_slice(line).map_err(|e| bad(format!("not JSON ({e})")))?;
        match value.get("v").and_then(serde_json::Value::as_u64) {
            Some(v) if v > u64::from(JOURNAL_VERSION) => {
                return Err(bad(format!(
                    "written by a newer k3-desktop (format {v}; this one reads {JOURNAL_VERSION})"
                )))
            }
            Some(_) => {}
            None => return Err(bad("no format version `v`".into())),
        }
        let line: Line = serde_json::from_value(value).map_err(|e| bad(format!("not a queue record ({e})")))?;
        events.push(line.event);
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: u64) -> QueueItem {
        QueueItem {
            id,
            label: format!("{id}"),
            prompt: "hello".into(),
            system: None,
            settings: ItemSettings { temperature: 0.0, top_p: 1.0, max_tokens: 8, thinking: false },
            seed: 7,
            added_at: 1,
        }
    }

    #[test]
    fn events_survive_a_reopen_and_a_torn_line_is_cut_back() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, events) = Journal::open(dir.path()).unwrap();
        assert!(events.is_empty());
        j.append(&Event::Add { item: item(1) }).unwrap();
        j.append(&Event::Pause).unwrap();
        drop(j);
        let path = dir.path().join(JOURNAL_FILE);
        let whole = std::fs::read(&path).unwrap();
        let mut torn = whole.clone();
        torn.extend_from_slice(br#"{"v":1,"event":"fin"#);
        std::fs::write(&path, &torn).unwrap();
        let (mut j, events) = Journal::open(dir.path()).unwrap();
        assert_eq!(events, vec![Event::Add { item: item(1) }, Event::Pause]);
        assert_eq!(std::fs::read(&path).unwrap(), whole, "the torn line is cut off");
        j.append(&Event::Resume).unwrap();
        let (_, events) = Journal::open(dir.path()).unwrap();
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn a_newer_or_broken_line_refuses_the_file_by_name_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let newer = "{\"v\":2,\"event\":\"pause\"}\n";
        std::fs::write(&path, newer).unwrap();
        let e = Journal::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("queue.jsonl") && e.contains("line 1") && e.contains("newer"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
        std::fs::write(&path, "{\"v\":1,\"event\":\"pause\"}\n{\"v\":1,\"event\":\"explode\"}\n").unwrap();
        let e = Journal::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("line 2") && e.contains("not a queue record"), "{e}");
    }

    #[test]
    fn compaction_keeps_the_live_events_only_when_the_file_has_grown() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open(dir.path()).unwrap();
        for _ in 0..300 {
            j.append(&Event::Pause).unwrap();
        }
        let live = vec![Event::Add { item: item(3) }];
        j.compact(3, &live).unwrap();
        assert_eq!(Journal::open(dir.path()).unwrap().1.len(), 300, "small slack: left alone");
        j.compact(300, &live).unwrap();
        j.append(&Event::Resume).unwrap();
        assert_eq!(Journal::open(dir.path()).unwrap().1, vec![Event::Add { item: item(3) }, Event::Resume]);
    }
}
