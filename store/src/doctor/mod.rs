//! `k3 doctor`: this machine as the engine sees it, with a green/amber/red verdict per item.
//!
//! Owns: [`examine`] (measure, then judge) and [`DoctorReport`] (`cpu`, `memory`, `drives`,
//! `verdicts`, `recommended_preset` with its `recommended_context`, `kv_bytes_per_position`:
//! the JSON `k3 doctor --json` prints). Measuring lives in
//! [`cpu`], [`memory`], [`drives`] (with [`mounts`]); judging in [`verdict`] and [`preset`],
//! pure functions of the measurements; the released checkpoint's sizes in [`released`].
//! Must not: plan memory itself (`k3_plan` does) or read `/proc/meminfo` a second way
//! (`k3_io::sysinfo` does).
//! Easy to break: Linux only so far (`/proc`, `/sys`, `statvfs`); macOS and Windows need
//! their own `cpu`/`drives` sources (the `sysinfo` crate) behind the same report.

pub mod cpu;
pub mod drive;
pub mod drives;
pub mod error;
pub mod memory;
pub mod mounts;
pub mod preset;
pub mod released;
pub mod verdict;

use std::path::PathBuf;

use serde::Serialize;

pub use cpu::{CpuInfo, Isa};
pub use drive::{Drive, DriveKind};
pub use error::DoctorError;
pub use memory::MemoryInfo;
pub use preset::{Recommendation, RunShape};
pub use verdict::{Level, SpaceNeed, Verdict};

/// Everything `k3 doctor` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorReport {
    pub cpu: CpuInfo,
    pub memory: MemoryInfo,
    pub drives: Vec<Drive>,
    pub verdicts: Vec<Verdict>,
    /// The preset name, or `None` when even `auto` refuses.
    pub recommended_preset: Option<&'static str>,
    /// The largest context the recommended preset keeps its trunk and cache at here,
    /// leaving `auto`'s headroom free (`k3_plan::default_context`).
    pub recommended_context: Option<u64>,
    /// What each position of context costs (the MLA cache of every MLA layer).
    pub kv_bytes_per_position: u64,
}

/// The released K3 model store's needs (checkpoint + packed trunk + 1 %).
pub fn k3_space_need() -> SpaceNeed {
    SpaceNeed {
        checkpoint_bytes: released::CHECKPOINT_BYTES,
        trunk_bytes: released::PACKED_TRUNK_BYTES,
        margin: released::SPACE_MARGIN,
    }
}

/// Examines this machine for the released K3 run as `shape`; `paths` empty: every volume.
pub fn examine(paths: &[PathBuf], shape: RunShape) -> Result<DoctorReport, DoctorError> {
    let cpu = CpuInfo::detect();
    let (memory, machine) = MemoryInfo::detect();
    let drives = drives::list_drives(paths)?;
    let fp = released::footprint();
    let auto = preset::auto_budget(&fp, machine, shape);
    let recommended = preset::recommend_preset(&fp, machine, shape);
    let mut verdicts = vec![verdict::cpu_verdict(&cpu), verdict::memory_verdict(&memory, &auto, recommended)];
    let need = k3_space_need();
    verdicts.extend(drives.iter().flat_map(|d| verdict::drive_verdicts(d, need)));
    let run = k3_plan::RunShape { streamed_trunk: true, io_threads: shape.io_threads };
    let recommended_context = recommended.and_then(|r| k3_plan::default_context(&fp, r.preset.choice(), run, machine));
    Ok(DoctorReport {
        cpu,
        memory,
        drives,
        verdicts,
        recommended_preset: recommended.map(|r| r.preset.name()),
        recommended_context,
        kv_bytes_per_position: fp.kv_bytes_per_position,
    })
}
