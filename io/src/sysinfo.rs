//! The machine's memory, read from the OS as plain numbers for `k3_plan`.
//!
//! Owns, on Linux: `MemTotal` / `MemAvailable` from `/proc/meminfo`, the cgroup v2 limit
//! and usage of this process's cgroup (`memory.max`, `memory.current`), swap, the
//! process's current and peak resident set (`VmRSS`, `VmHWM`), and memory pressure (PSI
//! `some avg10`), and the RAM compressed memory occupies (zswap's pool, `Zswap`). On macOS
//! and Windows the same figures come from `sysinfo_other.rs` (the `sysinfo` crate, and each
//! system's own call for the peak resident set, memory pressure — macOS's pressure level,
//! Windows' commit charge — and the macOS compressor); there is no cgroup.
//! Must not: decide anything: the planner gets [`MachineMemory`] and decides.
//! Easy to break: `memory.max` is the word `max` when there is no limit; a missing file
//! (cgroup v1, another OS) means "unknown", never zero.

#[cfg(target_os = "linux")]
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use k3_plan::{CgroupMemory, MachineMemory};

#[cfg(not(target_os = "linux"))]
pub use other::{compressed_bytes, current_rss_bytes, machine_memory, memory_pressure, peak_rss_bytes, swap_bytes};

#[cfg(not(target_os = "linux"))]
#[path = "sysinfo_other.rs"]
mod other;

/// This machine's memory as the planner sees it (zeros where unknown).
#[cfg(target_os = "linux")]
pub fn machine_memory() -> MachineMemory {
    MachineMemory {
        total_bytes: meminfo_bytes("MemTotal:").unwrap_or(0),
        available_bytes: meminfo_bytes("MemAvailable:").unwrap_or(0),
        cgroup: cgroup_memory(),
    }
}

/// A `kB` field of `/proc/meminfo`, in bytes.
#[cfg(target_os = "linux")]
fn meminfo_bytes(key: &str) -> Option<u64> {
    kb_field(&std::fs::read_to_string("/proc/meminfo").ok()?, key)
}

/// Swap space: (total, free) bytes, when the system says.
#[cfg(target_os = "linux")]
pub fn swap_bytes() -> Option<(u64, u64)> {
    Some((meminfo_bytes("SwapTotal:")?, meminfo_bytes("SwapFree:")?))
}

/// The RAM compressed memory occupies: zswap's pool (`Zswap` in `/proc/meminfo`, the
/// compressed size; kernels from 5.19 on). `None` where the kernel does not say.
#[cfg(target_os = "linux")]
pub fn compressed_bytes() -> Option<u64> {
    meminfo_bytes("Zswap:")
}

/// Current resident set of this process (`VmRSS`), in bytes.
#[cfg(target_os = "linux")]
pub fn current_rss_bytes() -> Option<u64> {
    kb_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmRSS:")
}

/// Peak resident set of this process (`VmHWM`), in bytes.
#[cfg(target_os = "linux")]
pub fn peak_rss_bytes() -> Option<u64> {
    kb_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmHWM:")
}

/// Memory pressure: the share of the last 10 s in which some task stalled on memory
/// (`some avg10` of `/proc/pressure/memory`, in percent); `None` without PSI.
#[cfg(target_os = "linux")]
pub fn memory_pressure() -> Option<super::pressure::MemoryPressure> {
    let avg10 = psi_some_avg10(&std::fs::read_to_string("/proc/pressure/memory").ok()?)?;
    Some(super::pressure::MemoryPressure::StallPercent(avg10))
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn psi_some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    let field = line.split_whitespace().find_map(|f| f.strip_prefix("avg10="))?;
    field.parse().ok().filter(|v: &f64| v.is_finite())
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn kb_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The cgroup v2 limit of this process, when it has one.
#[cfg(target_os = "linux")]
fn cgroup_memory() -> Option<CgroupMemory> {
    let dir = own_cgroup_dir()?;
    let limit = std::fs::read_to_string(dir.join("memory.max")).ok()?;
    let limit_bytes: u64 = limit.trim().parse().ok()?; // "max": no limit
    let usage_bytes = std::fs::read_to_string(dir.join("memory.current")).ok()?.trim().parse().ok()?;
    Some(CgroupMemory { limit_bytes, usage_bytes })
}

/// `/sys/fs/cgroup/<path>` from the `0::<path>` line of `/proc/self/cgroup`.
#[cfg(target_os = "linux")]
fn own_cgroup_dir() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::{kb_field, psi_some_avg10};

    #[test]
    fn psi_reads_the_some_line_only() {
        let text = "some avg10=1.25 avg60=0.50 avg300=0.10 total=123\nfull avg10=9.00 avg60=0 avg300=0 total=1\n";
        assert_eq!(psi_some_avg10(text), Some(1.25));
        assert_eq!(psi_some_avg10("full avg10=2.00\n"), None);
        assert_eq!(psi_some_avg10("some avg10=nan avg60=0\n"), None);
    }

    #[test]
    fn kb_fields_are_bytes_and_missing_ones_unknown() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(kb_field(text, "MemTotal:"), Some(24_000_000 * 1024));
        assert_eq!(kb_field(text, "MemAvailable:"), Some(1_024_000));
        assert_eq!(kb_field(text, "SwapTotal:"), None);
        // zswap's pool is `Zswap`, not the `Zswapped` pages it holds.
        let zswap = "Zswapped:     4096 kB\nZswap:        1024 kB\n";
        assert_eq!(kb_field(zswap, "Zswap:"), Some(1024 * 1024));
    }
}
