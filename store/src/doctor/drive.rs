//! One volume as `k3 doctor` reports it, and what kind of drive backs it. A leaf: the
//! per-system listings fill it and the verdicts judge it.
//!
//! Owns: [`Drive`], [`DriveKind`].

use std::path::PathBuf;

use serde::Serialize;

/// What backs a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriveKind {
    Ssd,
    Hdd,
    /// A virtual disk (VM, device mapper, zram): the kernel's rotational flag means little.
    Virtual,
    /// No block device (network, FUSE) or no sysfs entry.
    Unknown,
}

/// One volume.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drive {
    pub mount_point: PathBuf,
    pub device: String,
    pub fs_type: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub kind: DriveKind,
    /// `None` when there is no block device to ask.
    pub removable: Option<bool>,
    pub read_only: bool,
    pub network: bool,
    /// The folders asked about that live on this volume (`--path`).
    pub paths: Vec<PathBuf>,
    /// How the engine's weight reads bypass the page cache here (`O_DIRECT`, `F_NOCACHE`,
    /// `FILE_FLAG_NO_BUFFERING`, or `buffered (why)`), tried on a file in a folder asked
    /// about; `None` when no folder asked about holds a file to try.
    pub reads: Option<String>,
    /// How a download writes into a folder asked about here (`O_DIRECT`, or `buffered
    /// (why)`): the store's own write path tried on a one-block probe file, removed at once;
    /// `None` when no folder asked about takes a file (read-only, no permission).
    pub writes: Option<String>,
}
