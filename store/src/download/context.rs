//! What every file task of one download shares: the hub, the pinned commit, the store,
//! options, the event sink, the stop token, progress and the manifest.
//!
//! Owns: [`Context`] and its small helpers (events, interruptible sleep, blocking work,
//! recording a file as verified with the hf metadata beside it).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::events::{DownloadEvent, EventSink, FileState};
use super::failpoint;
use super::layout::StoreLayout;
use k3_io::segment_sums::{sidecar_path, SegmentCrcs};

use super::manifest::{ManifestStore, VerifiedRecord};
use super::options::DownloadOptions;
use super::progress::Tracker;
use crate::durable::{create_dirs, write_atomic};
use crate::error::{StoreError, StoreResult};
use crate::hub::{HubClient, RepoFile};
use crate::retry::Backoff;

pub struct Context {
    pub hub: HubClient,
    pub commit: String,
    pub layout: StoreLayout,
    pub opts: DownloadOptions,
    pub events: EventSink,
    pub stop: CancellationToken,
    pub tracker: Arc<Tracker>,
    pub manifest: Arc<ManifestStore>,
}

impl Context {
    pub fn emit(&self, e: DownloadEvent) {
        (self.events)(e);
    }

    pub fn notice(&self, path: &str, message: String) {
        self.emit(DownloadEvent::Notice { path: path.into(), message });
    }

    pub fn file_state(&self, path: &str, state: FileState, detail: Option<String>) {
        self.emit(DownloadEvent::FileState { path: path.into(), state, detail });
    }

    /// Sleeps `d` unless the download is stopped first.
    pub async fn sleep(&self, d: Duration) -> StoreResult<()> {
        tokio::select! {
            _ = self.stop.cancelled() => Err(StoreError::Stopped),
            _ = tokio::time::sleep(d) => Ok(()),
        }
    }

    /// Says why `path` is tried again and when, then waits (honouring the server's
    /// `retry_after`) unless the download is stopped first.
    pub async fn wait_to_retry(
        &self,
        path: &str,
        reason: String,
        backoff: &mut Backoff,
        retry_after: Option<Duration>,
    ) -> StoreResult<()> {
        let wait = backoff.next_wait(retry_after);
        self.emit(DownloadEvent::Retrying {
            path: path.into(),
            reason,
            attempt: backoff.attempt(),
            wait_seconds: wait.as_secs_f64(),
        });
        self.sleep(wait).await
    }

    /// Runs file-system work off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        tokio::task::spawn_blocking(f).await.map_err(|e| {
            StoreError::io(self.layout.root(), std::io::Error::other(format!("a file task failed: {e}")))
        })?
    }

    /// `file` sits verified at its final name: write `hf`'s metadata, the shard's segment
    /// sums (when `segments` were computed over its bytes), then our record.
    pub async fn record_verified(&self, file: &RepoFile, segments: Option<SegmentCrcs>) -> StoreResult<()> {
        let (layout, manifest, file, commit) =
            (self.layout.clone(), self.manifest.clone(), file.clone(), self.commit.clone());
        let path = file.path.clone();
        self.blocking(move || {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
            let meta = format!("{commit}\n{}\n{now}\n", file.hash.etag());
            let hf_dir = layout.hf_dir();
            if !hf_dir.join(".gitignore").exists() {
                write_atomic(&hf_dir.join(".gitignore"), b"*")?;
            }
            write_atomic(&layout.hf_metadata(&file.path), meta.as_bytes())?;
            failpoint::hit(failpoint::AFTER_MARKER);
            let dest = layout.file(&file.path);
            let record = VerifiedRecord::of(&dest).map_err(|e| StoreError::io(&dest, e))?;
            if let Some(sums) = segments.and_then(|s| s.finish(record)) {
                let sidecar = sidecar_path(layout.root(), &file.path);
                let bytes = sums.to_json().map_err(|e| StoreError::io(&sidecar, std::io::Error::other(e)))?;
                if let Some(dir) = sidecar.parent() {
                    create_dirs(dir)?;
                }
                write_atomic(&sidecar, &bytes)?;
            }
            manifest.set_verified(&file.path, Some(record))
        })
        .await?;
        self.file_state(&path, FileState::Verified, None);
        Ok(())
    }
}
