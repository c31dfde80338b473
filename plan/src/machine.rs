//! [`MachineMemory`]: what the machine has, as plain numbers the caller measured.
//!
//! Owns: combining `MemTotal`, `MemAvailable` and a cgroup limit into the memory this
//! process may use. Must not: read the machine (the engine's `io::sysinfo` does, so this
//! crate stays pure and builds for wasm).
//! Easy to break: a cgroup limit caps both figures: a container with 8 GB on a 256 GB
//! host has 8 GB, whatever `/proc/meminfo` says.

/// Memory figures of one machine, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineMemory {
    /// `MemTotal`.
    pub total_bytes: u64,
    /// `MemAvailable`.
    pub available_bytes: u64,
    /// The cgroup's `memory.max` (`None`: no limit) and `memory.current`.
    pub cgroup: Option<CgroupMemory>,
}

/// A cgroup's memory limit and what it already uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupMemory {
    pub limit_bytes: u64,
    pub usage_bytes: u64,
}

impl MachineMemory {
    /// A machine without a cgroup limit.
    pub fn new(total_bytes: u64, available_bytes: u64) -> Self {
        MachineMemory { total_bytes, available_bytes, cgroup: None }
    }

    /// Total memory this process may ever use: `MemTotal`, capped by the cgroup limit.
    pub fn usable_total_bytes(&self) -> u64 {
        match self.cgroup {
            Some(c) => self.total_bytes.min(c.limit_bytes),
            None => self.total_bytes,
        }
    }

    /// Memory available now: `MemAvailable`, capped by what the cgroup has left.
    pub fn usable_available_bytes(&self) -> u64 {
        match self.cgroup {
            Some(c) => self.available_bytes.min(c.limit_bytes.saturating_sub(c.usage_bytes)),
            None => self.available_bytes,
        }
    }
}
