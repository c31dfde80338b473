//! k3-store: getting the model onto a drive, and knowing the drive.
//!
//! Owns (so far): [`diskbench`] (`k3 bench disk`: one-expert O_DIRECT reads at depth 1 and
//! 16 with latencies, and the `--sweep` of request size × requests in flight whose best
//! point becomes the engine's `ReadPattern`) and [`doctor`] (`k3 doctor`: CPU, memory and
//! drives with green/amber/red verdicts and the recommended preset). Downloads and
//! verification land here next (the engine never learns HTTP or drives).
//! Must not: read weights for the engine: streamed reads are `k3_engine::io`'s.
#![forbid(unsafe_code)]

pub mod diskbench;
pub mod doctor;

pub use diskbench::{
    best_over, floor_grid, measure_expert_reads, sweep, Access, DiskBenchError, DiskPoint, DiskSweep,
    ExpertReadProgress, ExpertReadReport, ExpertReadRequest, PassFigures, SavedPattern, ScratchFile, SweepRequest,
};
