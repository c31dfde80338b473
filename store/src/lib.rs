//! k3-store: getting the model onto a drive, and knowing the drive.
//!
//! Owns: [`hub`] (the Hugging Face protocol: pin, list, ranged GETs), [`download`] (a
//! repository into a store folder through a durable journal), [`verify`] (hashing files in
//! place: adoption and `k3 verify`), and [`diskbench`] (the O_DIRECT measurements behind
//! `k3 bench disk`). The engine never learns HTTP or drives; this crate uses its format
//! checks (config, shard headers) and I/O.
//! Must not: read weights for the engine (streamed reads are `k3_engine::io`'s).
#![forbid(unsafe_code)]

pub mod diskbench;
pub mod download;
pub mod durable;
pub mod error;
pub mod hub;
pub mod retry;
pub mod verify;

pub use diskbench::{
    best_over, floor_grid, sweep, Access, DiskPoint, DiskSweep, SavedPattern, ScratchFile, SweepRequest,
};
pub use download::{download, DownloadEvent, DownloadOptions, DownloadSummary, FileState};
pub use error::{StoreError, StoreResult};
pub use hub::{HubClient, HubSettings, RepoFile};
