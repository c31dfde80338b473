//! Measuring the drive: how fast it serves the engine's reads, never the page cache's.
//!
//! Owns: [`expert`] (`k3 bench disk`: one-expert O_DIRECT reads at random 4096-aligned
//! offsets, at queue depth 1 and 16, with per-read latency, a progress callback and a cancel
//! flag for the app's wizard), [`sweep`] (`k3 bench disk --sweep`: request size × requests
//! in flight, whose best point becomes the engine's `ReadPattern`), [`scratch`] (the scratch
//! file written without filling the page cache and removed on drop), [`cache`] (dropping a
//! file's cached pages, spotting file systems that live in RAM), [`latency`] (percentiles)
//! and [`error`] ([`DiskBenchError`]).
//! Must not: report page-cache speed as a drive's: reads are O_DIRECT, and where a file
//! system refuses O_DIRECT the figures say so (`direct: false`).
//! Easy to break: O_DIRECT needs buffer address, offset and length aligned to 4096.

pub mod cache;
pub mod error;
pub mod expert;
pub mod latency;
pub mod scratch;
pub mod sweep;

pub use error::DiskBenchError;
pub use expert::{
    measure_expert_reads, ExpertReadProgress, ExpertReadReport, ExpertReadRequest, PassFigures, EXPERT_BLOCK_BYTES,
    EXPERT_DEPTHS,
};
pub use scratch::ScratchFile;
pub use sweep::{best_over, floor_grid, sweep, Access, DiskPoint, DiskSweep, SavedPattern, SweepRequest};

/// One MiB.
pub const MIB: usize = 1 << 20;

/// A temporary folder on the drive the crate lives on: `/tmp` may be a RAM file system,
/// which the expert bench refuses.
#[cfg(test)]
pub(crate) fn drive_tempdir() -> tempfile::TempDir {
    match tempfile::Builder::new().prefix(".k3-store-test-").tempdir_in(env!("CARGO_MANIFEST_DIR")) {
        Ok(dir) => dir,
        Err(e) => panic!("a temporary folder in {}: {e}", env!("CARGO_MANIFEST_DIR")),
    }
}
