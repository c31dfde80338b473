//! What a download tells its front end: the pinned commit, space checks, each file's
//! state, progress at most 10 times a second, retries, pauses and notices. The CLI draws
//! these as a progress bar or JSON lines; the app's wizard as its grid.
//!
//! Owns: [`DownloadEvent`], [`FileState`], [`ProgressSnapshot`], [`EventSink`].

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::space::Need;

/// Receives every event; called from the download's tasks, so it must be quick.
pub type EventSink = Arc<dyn Fn(DownloadEvent) + Send + Sync>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    Queued,
    Downloading,
    Verifying,
    Verified,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgressSnapshot {
    /// Bytes of the checkpoint on disk or in flight to it.
    pub done_bytes: u64,
    pub total_bytes: u64,
    /// Bytes received per second over the last 10 s (0 after 10 s without data).
    pub speed_bytes_per_s: f64,
    /// Seconds to go at that speed; `None` while the speed is 0.
    pub eta_seconds: Option<f64>,
    /// Files being fetched now.
    pub active_files: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum DownloadEvent {
    /// The revision is pinned and the file list known.
    Pinned {
        repo: String,
        commit: String,
        files: usize,
        total_bytes: u64,
        kept_bytes: u64,
    },
    /// A file system was checked for room.
    SpaceChecked {
        dir: PathBuf,
        need: Need,
        free: u64,
    },
    FileState {
        path: String,
        state: FileState,
        detail: Option<String>,
    },
    Progress(ProgressSnapshot),
    /// A transient failure; the file is tried again after `wait_seconds`.
    Retrying {
        path: String,
        reason: String,
        attempt: u32,
        wait_seconds: f64,
    },
    /// The drive filled up mid-write; waiting for `needed` bytes of room (`free` now).
    Paused {
        path: String,
        reason: String,
        free: u64,
        needed: u64,
    },
    /// Something the user should know that is not a failure (a restart, a re-download).
    Notice {
        path: String,
        message: String,
    },
    /// Every file is verified.
    Complete {
        commit: String,
        files: usize,
        total_bytes: u64,
    },
}
