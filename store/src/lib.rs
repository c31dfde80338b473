//! k3-store: getting the model onto a drive, and knowing the drive.
//!
//! Owns: [`hub`] (the Hugging Face protocol: pin, list, ranged GETs), [`download`] (a
//! repository into a store folder through a durable journal), [`install`] (download →
//! verify → pack, the pipeline `k3 download` and the wizard share), [`verify`] (hashing files in
//! place: adoption and `k3 verify`), [`diskbench`] (`k3 bench disk`: one-expert O_DIRECT
//! reads at depth 1 and 16 with latencies, and the `--sweep` of request size × requests in
//! flight whose best point becomes the engine's `ReadPattern`) and [`doctor`] (`k3 doctor`:
//! CPU, memory and drives with green/amber/red verdicts and the recommended preset), and
//! [`windows`] (the drive read as the engine reads it, for `k3 forecast`). The
//! engine never learns HTTP or drives; this crate uses its format checks and I/O.
//! Must not: read weights for the engine (streamed reads are `k3_io`'s).
#![forbid(unsafe_code)]

pub mod diskbench;
pub mod doctor;
pub mod download;
pub mod durable;
pub mod error;
pub mod hub;
pub mod install;
pub mod retry;
pub mod verify;
pub mod windows;

pub use diskbench::{
    best_over, floor_grid, measure_expert_reads, sweep, Access, DiskBenchError, DiskPoint, DiskSweep,
    ExpertReadProgress, ExpertReadReport, ExpertReadRequest, PassFigures, SavedPattern, ScratchFile, SweepRequest,
};
pub use download::{download, DownloadEvent, DownloadOptions, DownloadSummary, FileState, ProgressSnapshot};
pub use error::{StoreError, StoreResult};
pub use hub::{HubClient, HubSettings, RepoFile};
pub use install::{Install, PackStatus, Packed};
pub use windows::{measure_windows, Order, WindowRequest, WindowResult};
