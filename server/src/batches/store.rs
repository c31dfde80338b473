//! The Batch API's files and batches on disk: what survives a crash, and how it is written.
//!
//! Owns: the folder layout (`files/ID` with `files/ID.json` beside it, `batches/ID.json`),
//! the OpenAI objects stored there ([`FileObject`], [`BatchObject`]), atomic metadata
//! writes (a temporary file, `fdatasync`, rename, then the folder synced), and appending
//! one result line with `fdatasync` ([`Store::append_line`]) — the journal a batch resumes
//! from: an item whose line is in its output or error file is finished.
//! One process at a time keeps a folder (a lock file).
//! Must not: leave a half-written object: a metadata file is either the old one or the new
//! one; a result line cut by a crash is truncated away when the batch resumes
//! ([`Store::finished_ids`]).

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A file of the Files API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileObject {
    pub id: String,
    pub object: String,
    pub bytes: u64,
    pub created_at: u64,
    pub filename: String,
    pub purpose: String,
}

/// Where a batch stands (OpenAI's names).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    Validating,
    Failed,
    InProgress,
    Finalizing,
    Completed,
    Expired,
    Cancelling,
    Cancelled,
}

impl BatchStatus {
    /// True while the batch still has items to run (it resumes after a restart).
    pub fn is_running(self) -> bool {
        matches!(self, BatchStatus::Validating | BatchStatus::InProgress | BatchStatus::Finalizing)
    }
}

/// A batch's request counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct RequestCounts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
}

/// A batch of the Batch API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BatchObject {
    pub id: String,
    pub object: String,
    pub endpoint: String,
    pub errors: Option<Value>,
    pub input_file_id: String,
    pub completion_window: String,
    pub status: BatchStatus,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub created_at: u64,
    pub in_progress_at: Option<u64>,
    pub expires_at: Option<u64>,
    pub finalizing_at: Option<u64>,
    pub completed_at: Option<u64>,
    pub failed_at: Option<u64>,
    pub expired_at: Option<u64>,
    pub cancelling_at: Option<u64>,
    pub cancelled_at: Option<u64>,
    pub request_counts: RequestCounts,
    pub metadata: Option<Value>,
}

impl BatchObject {
    /// A batch of `total` requests of `input_file_id`, in progress from `created`.
    pub fn in_progress(
        id: String,
        input_file_id: String,
        (endpoint, window): (String, String),
        total: u64,
        created: u64,
    ) -> Self {
        BatchObject {
            id,
            object: "batch".into(),
            endpoint,
            errors: None,
            input_file_id,
            completion_window: window,
            status: BatchStatus::InProgress,
            output_file_id: None,
            error_file_id: None,
            created_at: created,
            in_progress_at: Some(created),
            expires_at: Some(created + 24 * 3600),
            finalizing_at: None,
            completed_at: None,
            failed_at: None,
            expired_at: None,
            cancelling_at: None,
            cancelled_at: None,
            request_counts: RequestCounts { total, completed: 0, failed: 0 },
            metadata: None,
        }
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A new id with `prefix`: the clock's nanoseconds and a counter, in hex.
pub fn new_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    format!("{prefix}{nanos:016x}{:04x}", NEXT.fetch_add(1, Ordering::Relaxed) & 0xffff)
}

/// True for an id this store could have made (no path separators or dots).
fn plain(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The Batch API's folder, locked to this process.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// Held while the store is open: two servers on one folder would both resume its
    /// batches and run their requests twice.
    _lock: File,
}

impl Store {
    /// Opens (creating) `dir` with its `files` and `batches` folders; refused while another
    /// process has it open.
    pub fn open(dir: &Path) -> io::Result<Store> {
        fs::create_dir_all(dir.join("files"))?;
        fs::create_dir_all(dir.join("batches"))?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(".lock"))?;
        match lock.try_lock() {
            Ok(()) => Ok(Store { dir: dir.to_path_buf(), _lock: lock }),
            Err(fs::TryLockError::WouldBlock) => Err(io::Error::other("another k3 serve keeps its batches there")),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// The bytes of file `id` (`None` for an id that cannot name one).
    pub fn file_path(&self, id: &str) -> Option<PathBuf> {
        plain(id).then(|| self.dir.join("files").join(id))
    }

    fn file_meta_path(&self, id: &str) -> Option<PathBuf> {
        plain(id).then(|| self.dir.join("files").join(format!("{id}.json")))
    }

    fn batch_path(&self, id: &str) -> Option<PathBuf> {
        plain(id).then(|| self.dir.join("batches").join(format!("{id}.json")))
    }

    /// Stores `bytes` as a new file; its object once both are durable.
    pub fn add_file(&self, filename: &str, purpose: &str, bytes: &[u8]) -> io::Result<FileObject> {
        let id = new_id("file-");
        let path = self.file_path(&id).ok_or_else(|| io::Error::other("bad id"))?;
        write_atomic(&path, bytes)?;
        let file = FileObject {
            id,
            object: "file".into(),
            bytes: bytes.len() as u64,
            created_at: now(),
            filename: filename.into(),
            purpose: purpose.into(),
        };
        self.put_file(&file)?;
        Ok(file)
    }

    /// Writes a file's object (its bytes are already there).
    pub fn put_file(&self, file: &FileObject) -> io::Result<()> {
        write_object(self.file_meta_path(&file.id), file)
    }

    pub fn file(&self, id: &str) -> Option<FileObject> {
        read_json(&self.file_meta_path(id)?)
    }

    /// Every file, newest first.
    pub fn files(&self) -> Vec<FileObject> {
        newest_first(self.objects("files"), |f: &FileObject| (f.created_at, f.id.clone()))
    }

    /// Deletes file `id`; false when there is none.
    pub fn delete_file(&self, id: &str) -> io::Result<bool> {
        let (Some(meta), Some(data)) = (self.file_meta_path(id), self.file_path(id)) else { return Ok(false) };
        if !meta.exists() {
            return Ok(false);
        }
        fs::remove_file(&meta)?;
        let _ = fs::remove_file(&data);
        Ok(true)
    }

    pub fn put_batch(&self, batch: &BatchObject) -> io::Result<()> {
        write_object(self.batch_path(&batch.id), batch)
    }

    pub fn batch(&self, id: &str) -> Option<BatchObject> {
        read_json(&self.batch_path(id)?)
    }

    /// Every batch, newest first.
    pub fn batches(&self) -> Vec<BatchObject> {
        newest_first(self.objects("batches"), |b: &BatchObject| (b.created_at, b.id.clone()))
    }

    fn objects<T: serde::de::DeserializeOwned>(&self, folder: &str) -> Vec<T> {
        let Ok(entries) = fs::read_dir(self.dir.join(folder)) else { return Vec::new() };
        entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|p| read_json(&p))
            .collect()
    }

    /// Appends `line` (one JSON object, no newline) and a newline to file `id`, durably.
    pub fn append_line(&self, id: &str, line: &[u8]) -> io::Result<()> {
        let path = self.file_path(id).ok_or_else(|| io::Error::other("bad id"))?;
        let mut f = OpenOptions::new().create(true).append(true).open(path)?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        f.write_all(&buf)?;
        f.sync_data()
    }

    /// The `custom_id`s with a whole line in file `id`; a line cut by a crash (no newline)
    /// is truncated away first.
    pub fn finished_ids(&self, id: &str) -> io::Result<HashSet<String>> {
        let Some(path) = self.file_path(id) else { return Ok(HashSet::new()) };
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashSet::new()),
            Err(e) => return Err(e),
        };
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < bytes.len() {
            OpenOptions::new().write(true).open(&path)?.set_len(whole as u64)?;
        }
        let mut ids = HashSet::new();
        for line in BufReader::new(&bytes[..whole]).lines() {
            let v: Value = serde_json::from_str(&line?).map_err(io::Error::other)?;
            if let Some(c) = v["custom_id"].as_str() {
                ids.insert(c.to_string());
            }
        }
        Ok(ids)
    }

    /// Bytes of file `id` now (0 when it does not exist yet).
    pub fn size(&self, id: &str) -> u64 {
        self.file_path(id).and_then(|p| fs::metadata(p).ok()).map_or(0, |m| m.len())
    }
}

/// `object` as JSON at `path` ([`write_atomic`]); `None` is an id that names no path.
fn write_object<T: Serialize>(path: Option<PathBuf>, object: &T) -> io::Result<()> {
    let path = path.ok_or_else(|| io::Error::other("an id that names no file"))?;
    write_atomic(&path, &serde_json::to_vec(object).map_err(io::Error::other)?)
}

/// `all` sorted newest first by `(created_at, id)`.
fn newest_first<T, K: Ord>(mut all: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    all.sort_by_key(|o| std::cmp::Reverse(key(o)));
    all
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// `bytes` at `path`, all or nothing: a temporary file beside it, synced, renamed over it,
/// and the folder synced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
    }
    fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        k3_io::os::sync_dir(parent)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_cut_by_a_crash_is_truncated_and_whole_ones_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.append_line("file-out", br#"{"custom_id":"a"}"#).unwrap();
        store.append_line("file-out", br#"{"custom_id":"b"}"#).unwrap();
        let path = store.file_path("file-out").unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"custom_id":"c","resp"#).unwrap();
        let ids = store.finished_ids("file-out").unwrap();
        assert_eq!(ids, ["a", "b"].iter().map(|s| s.to_string()).collect());
        assert!(fs::read(&path).unwrap().ends_with(b"}\n"), "the torn tail is gone");
    }

    #[test]
    fn one_process_at_a_time_keeps_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let first = Store::open(dir.path()).unwrap();
        let second = Store::open(dir.path()).unwrap_err();
        assert!(second.to_string().contains("another k3 serve"), "{second}");
        drop(first);
        assert!(Store::open(dir.path()).is_ok());
    }

    #[test]
    fn ids_that_could_name_another_path_name_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for bad in ["../x", "a/b", "", "x.json", &"a".repeat(65)] {
            assert!(store.file_path(bad).is_none(), "{bad}");
            assert!(store.batch(bad).is_none(), "{bad}");
        }
        let f = store.add_file("in.jsonl", "batch", b"{}\n").unwrap();
        assert_eq!(store.file(&f.id), Some(f.clone()));
        assert_eq!(store.files(), vec![f.clone()]);
        assert!(store.delete_file(&f.id).unwrap());
        assert!(store.file(&f.id).is_none());
    }
}
