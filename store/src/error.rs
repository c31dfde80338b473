//! Every way getting or checking the model can fail, each naming the file, URL or
//! folder and what to do about it (RELIABILITY §1 "Clear errors").
//!
//! Owns: [`StoreError`]. Must not: carry the hub token in any message.

use std::path::PathBuf;

use k3_io::format::CheckpointFault;

use crate::download::shortfall::Shortfall;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{url}: access denied (HTTP {status}). Accept the model's licence on its Hugging Face page, then set HF_TOKEN or save a token to {}", token_path.display())]
    Denied { url: String, status: u16, token_path: PathBuf },
    #[error("{url}: not found (HTTP 404); check the repository id and the revision")]
    NotFound { url: String },
    #[error("{url}: HTTP {status}: {message}")]
    Http { url: String, status: u16, message: String },
    #[error("{url}: {message}")]
    Network { url: String, message: String },
    #[error("{url}: the hub's answer is not {what}: {detail}")]
    BadAnswer { url: String, what: &'static str, detail: String },
    #[error("{repo}: the hub lists `{path}`, which is refused: {reason}")]
    UnsafeName { repo: String, path: String, reason: &'static str },
    #[error("`{repo}` is not a repository id: {reason}")]
    BadRepo { repo: String, reason: &'static str },
    /// The hub's address (`HF_ENDPOINT`, `--endpoint`) is not one to send requests to.
    #[error("`{url}` is not a hub address: {reason}")]
    BadEndpoint { url: String, reason: &'static str },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    NoSpace(Shortfall),
    #[error("{} is in use by another k3 download (lock {}); wait for it or stop it", store.display(), lock.display())]
    Locked { store: PathBuf, lock: PathBuf },
    #[error("{path}: failed its integrity check twice (expected SHA-256 {expected}, got {got}). Bad bytes are never kept; a proxy, the disk or RAM may be at fault. Run the download again to retry this file.")]
    HashMismatch { path: String, expected: String, got: String },
    #[error("{path}: its safetensors header is refused before the body is fetched: {fault}")]
    BadShardHeader { path: String, fault: CheckpointFault },
    #[error("config.json from the hub is refused: {0}")]
    BadConfig(k3_io::Error),
    #[error("{}: pinned to commit {pinned}, but revision `{requested}` is {resolved}; versions are never mixed, so download it into another folder", store.display())]
    CommitMismatch { store: PathBuf, pinned: String, requested: String, resolved: String },
    #[error("{}: the manifest is unreadable ({detail}); move the folder's .k3-desktop aside to start over", path.display())]
    BadManifest { path: PathBuf, detail: String },
    #[error("{}: {reason}; choose another drive", dir.display())]
    UnsuitableDrive { dir: PathBuf, reason: String },
    #[error("HF_HUB_OFFLINE is set: nothing can be fetched")]
    Offline,
    #[error("stopped; everything durable is kept and the next run resumes")]
    Stopped,
    #[error("{} of {total} files could not be fetched: {}", failed.len(), summary(failed))]
    FilesFailed { failed: Vec<(String, StoreError)>, total: usize },
    #[error("{}: {} of {total} files are missing or bad: {}", store.display(), bad.len(), bad.join(", "))]
    NotVerified { store: PathBuf, bad: Vec<String>, total: usize },
}

fn summary(failed: &[(String, StoreError)]) -> String {
    failed.iter().map(|(p, e)| format!("{p}: {e}")).collect::<Vec<_>>().join("; ")
}

impl StoreError {
    /// Whether the user's input or machine must change (a flag, a token, a drive, space),
    /// as opposed to a failure a later run may get past.
    pub fn is_input_error(&self) -> bool {
        match self {
            StoreError::Denied { .. }
            | StoreError::NotFound { .. }
            | StoreError::UnsafeName { .. }
            | StoreError::BadRepo { .. }
            | StoreError::BadEndpoint { .. }
            | StoreError::NoSpace(_)
            | StoreError::Locked { .. }
            | StoreError::CommitMismatch { .. }
            | StoreError::UnsuitableDrive { .. }
            | StoreError::Offline => true,
            StoreError::Http { .. }
            | StoreError::Network { .. }
            | StoreError::BadAnswer { .. }
            | StoreError::Io { .. }
            | StoreError::HashMismatch { .. }
            | StoreError::BadShardHeader { .. }
            | StoreError::BadConfig(_)
            | StoreError::BadManifest { .. }
            | StoreError::Stopped
            | StoreError::FilesFailed { .. }
            | StoreError::NotVerified { .. } => false,
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        StoreError::Io { path: path.into(), source }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;
