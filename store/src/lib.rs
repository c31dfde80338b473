//! k3-store: getting the model onto a drive, and knowing the drive.
//!
//! Owns (so far): [`diskbench`], the O_DIRECT sweep of request size × requests in flight
//! behind `k3 bench disk`, whose best point becomes the engine's `ReadPattern`, and
//! [`windows`], the drive read as the engine reads it, for `k3 forecast`. Downloads
//! and verification land here next (the engine never learns HTTP or drives).
//! Must not: read weights for the engine: streamed reads are `k3_engine::io`'s.
#![forbid(unsafe_code)]

pub mod diskbench;
pub mod windows;

pub use diskbench::{
    best_over, floor_grid, sweep, Access, DiskPoint, DiskSweep, SavedPattern, ScratchFile, SweepRequest,
};
pub use windows::{measure_windows, Order, WindowRequest, WindowResult};
