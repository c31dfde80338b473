//! The machine's memory as the planner sees it, plus swap and compressed memory, for the
//! doctor.
//!
//! Owns: [`MemoryInfo`]: the engine's own reading of the machine's memory, cgroup, swap and
//! compressor (`k3_io::sysinfo`, not a second parser).

use k3_io::sysinfo::{compressed_bytes, machine_memory, swap_bytes};
use k3_plan::MachineMemory;
use serde::Serialize;

/// Memory figures in bytes (0 where unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryInfo {
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
    /// The RAM compressed memory occupies: the macOS compressor, zswap's pool on Linux
    /// (`None`: the system does not say, as on Windows).
    pub compressed_bytes: Option<u64>,
    /// The cgroup v2 `memory.max` (`None`: no limit).
    pub cgroup_limit_bytes: Option<u64>,
    /// `MemAvailable` capped by what the cgroup has left: what the planner may use.
    pub usable_available_bytes: u64,
}

impl MemoryInfo {
    pub fn detect() -> (MemoryInfo, MachineMemory) {
        let machine = machine_memory();
        let (swap_total_bytes, swap_free_bytes) = swap_bytes().unwrap_or((0, 0));
        let info = MemoryInfo {
            total_bytes: machine.total_bytes,
            available_bytes: machine.available_bytes,
            swap_total_bytes,
            swap_free_bytes,
            compressed_bytes: compressed_bytes(),
            cgroup_limit_bytes: machine.cgroup.map(|c| c.limit_bytes),
            usable_available_bytes: machine.usable_available_bytes(),
        };
        (info, machine)
    }
}
