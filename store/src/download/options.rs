//! The knobs of a download, with the values real use needs; tests shrink the times.
//!
//! Owns: [`DownloadOptions`].

use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct DownloadOptions {
    pub repo: String,
    /// A branch, tag or commit; pinned once to a commit.
    pub revision: String,
    /// The store folder (`hf download --local-dir` layout).
    pub store: PathBuf,
    /// Where the packed trunk will go, for the space check (`None`: beside the store).
    pub trunk_dir: Option<PathBuf>,
    /// Bytes the packed trunk will need (0 when unknown or not packed).
    pub trunk_bytes: u64,
    /// Files fetched at once.
    pub jobs: usize,
    /// Bytes hashed and journaled as one record (written one chunk behind the network).
    pub chunk_bytes: usize,
    /// Bytes made durable with one `fdatasync` (and journaled with one `fsync`): at most
    /// this much and one chunk are fetched again after a crash.
    pub sync_bytes: u64,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// No byte for this long, or fewer than `min_window_bytes` in it: reconnect (DL-15).
    pub stall_timeout: Duration,
    pub min_window_bytes: u64,
    /// How often free space is checked while paused on a full drive.
    pub space_poll: Duration,
    /// Interval between progress snapshots (≥ 100 ms).
    pub progress_interval: Duration,
}

impl DownloadOptions {
    pub fn new(repo: &str, revision: &str, store: PathBuf) -> DownloadOptions {
        DownloadOptions {
            repo: repo.into(),
            revision: revision.into(),
            store,
            trunk_dir: None,
            trunk_bytes: 0,
            jobs: 4,
            chunk_bytes: 64 << 20,
            sync_bytes: 256 << 20,
            backoff_base: Duration::from_secs(2),
            backoff_cap: Duration::from_secs(60),
            stall_timeout: Duration::from_secs(30),
            min_window_bytes: 256 << 10,
            space_poll: Duration::from_secs(5),
            progress_interval: Duration::from_millis(100),
        }
    }
}
