//! What the setup jobs tell the window, and the batching that keeps the window from
//! redrawing more than 10 times a second however fast the download reports.
//!
//! Owns: [`SetupEvent`], [`FileCell`], [`Batch`] (pure: pushes of download events, one
//! flush per tick).

use std::collections::BTreeMap;

use k3_store::{DownloadEvent, FileState};

use super::flow::SetupStep;
use crate::error::AppError;
use crate::worker::ModelInfo;

/// One file of the download grid.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCell {
    pub path: String,
    /// `queued`, `downloading`, `verifying`, `verified` or `failed`.
    pub state: String,
    pub detail: Option<String>,
}

/// What a setup job tells as it runs (the window streams each over the `onEvent` channel
/// of `setup_run` and `setup_speed_test`).
#[derive(Debug, Clone, PartialEq)]
pub enum SetupEvent {
    Step {
        step: SetupStep,
    },
    Pinned {
        commit: String,
        files: u32,
        total_bytes: u64,
        kept_bytes: u64,
    },
    /// At most one per tick: totals, the 10-s speed, and the cells that changed.
    Progress {
        done_bytes: u64,
        total_bytes: u64,
        speed_bytes_per_s: f64,
        eta_seconds: Option<f64>,
        files: Vec<FileCell>,
    },
    Retry {
        path: String,
        reason: String,
        attempt: u32,
        wait_seconds: f64,
    },
    Paused {
        reason: String,
        free_bytes: u64,
        needed_bytes: u64,
    },
    Notice {
        path: String,
        message: String,
    },
    Pack {
        layer: u32,
        layers: u32,
        bytes_done: u64,
        bytes_total: u64,
        mb_per_s: f64,
    },
    /// The first load, every 100 ms: trunk layers pinned so far (0 of 0 before pinning
    /// starts or when nothing is pinned) and the app's resident set.
    FirstLoad {
        layers_done: u32,
        layers_total: u32,
        rss_bytes: Option<u64>,
        seconds: f64,
    },
    SpeedTest {
        depth: u32,
        bytes_read: u64,
        mb_per_s: f64,
        fraction: f64,
    },
    Ready {
        model: ModelInfo,
    },
    Stopped,
    /// Whether the system keeps the machine awake while the job runs (`detail`: why not).
    Awake {
        held: bool,
        detail: Option<String>,
    },
    /// The failure about to be reported has its own screen.
    Problem {
        problem: super::problem::SetupProblem,
    },
    Failed {
        error: AppError,
    },
}

fn state_name(s: FileState) -> &'static str {
    match s {
        FileState::Queued => "queued",
        FileState::Downloading => "downloading",
        FileState::Verifying => "verifying",
        FileState::Verified => "verified",
        FileState::Failed => "failed",
    }
}

/// Download events gathered between two flushes.
#[derive(Default)]
pub struct Batch {
    progress: Option<k3_store::ProgressSnapshot>,
    files: BTreeMap<String, FileCell>,
    urgent: Vec<SetupEvent>,
}

impl Batch {
    pub fn push(&mut self, e: DownloadEvent) {
        match e {
            DownloadEvent::Progress(p) => self.progress = Some(p),
            DownloadEvent::FileState { path, state, detail } => {
                self.files.insert(path.clone(), FileCell { path, state: state_name(state).into(), detail });
            }
            DownloadEvent::Pinned { commit, files, total_bytes, kept_bytes, .. } => {
                log::info!("download: commit {commit}, {files} files, {total_bytes} bytes ({kept_bytes} already here)");
                self.urgent.push(SetupEvent::Pinned { commit, files: files as u32, total_bytes, kept_bytes })
            }
            DownloadEvent::Retrying { path, reason, attempt, wait_seconds } => {
                log::warn!("download: {path}: {reason}; retry {attempt} in {wait_seconds:.0} s");
                self.urgent.push(SetupEvent::Retry { path, reason, attempt, wait_seconds })
            }
            DownloadEvent::Paused { reason, free, needed, .. } => {
                log::warn!("download paused: {reason} ({free} bytes free, {needed} needed)");
                self.urgent.push(SetupEvent::Paused { reason, free_bytes: free, needed_bytes: needed })
            }
            DownloadEvent::Notice { path, message } => {
                log::info!("download: {path}: {message}");
                self.urgent.push(SetupEvent::Notice { path, message })
            }
            DownloadEvent::SpaceChecked { .. } | DownloadEvent::Complete { .. } => {}
        }
    }

    /// Everything gathered, as few events as possible: the rare ones in order, then one
    /// progress event with the changed cells.
    pub fn take(&mut self) -> Vec<SetupEvent> {
        let mut out = std::mem::take(&mut self.urgent);
        let files: Vec<FileCell> = std::mem::take(&mut self.files).into_values().collect();
        if let Some(p) = self.progress.take() {
            out.push(SetupEvent::Progress {
                done_bytes: p.done_bytes,
                total_bytes: p.total_bytes,
                speed_bytes_per_s: p.speed_bytes_per_s,
                eta_seconds: p.eta_seconds,
                files,
            });
        } else if !files.is_empty() {
            out.push(SetupEvent::Progress {
                done_bytes: 0,
                total_bytes: 0,
                speed_bytes_per_s: 0.0,
                eta_seconds: None,
                files,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k3_store::ProgressSnapshot;

    fn progress(done: u64) -> DownloadEvent {
        DownloadEvent::Progress(ProgressSnapshot {
            done_bytes: done,
            total_bytes: 100,
            speed_bytes_per_s: 1.0,
            eta_seconds: None,
            active_files: 1,
        })
    }

    #[test]
    fn a_burst_of_events_becomes_one_progress_event_per_flush() {
        let mut b = Batch::default();
        for i in 0..96 {
            b.push(DownloadEvent::FileState {
                path: format!("model-{i:05}.safetensors"),
                state: FileState::Queued,
                detail: None,
            });
        }
        for done in 0..50 {
            b.push(progress(done));
        }
        b.push(DownloadEvent::FileState {
            path: "model-00003.safetensors".into(),
            state: FileState::Downloading,
            detail: None,
        });
        let out = b.take();
        assert_eq!(out.len(), 1, "one event per flush");
        let SetupEvent::Progress { done_bytes, files, .. } = &out[0] else { panic!("{out:?}") };
        assert_eq!(*done_bytes, 49, "the latest totals");
        assert_eq!(files.len(), 96, "each cell once");
        assert_eq!(
            files.iter().find(|f| f.path == "model-00003.safetensors").unwrap().state,
            "downloading",
            "its latest state"
        );
        assert!(b.take().is_empty(), "nothing twice");
    }

    #[test]
    fn retries_and_pauses_are_kept_in_order_before_the_progress() {
        let mut b = Batch::default();
        b.push(progress(5));
        b.push(DownloadEvent::Retrying { path: "a".into(), reason: "HTTP 503".into(), attempt: 1, wait_seconds: 2.0 });
        b.push(DownloadEvent::Paused { path: "a".into(), reason: "full".into(), free: 1, needed: 2 });
        let out = b.take();
        assert!(
            matches!(out[0], SetupEvent::Retry { .. })
                && matches!(out[1], SetupEvent::Paused { .. })
                && matches!(out[2], SetupEvent::Progress { .. })
        );
    }
}
