//! `io::sysinfo` on macOS and Windows: memory and swap from the `sysinfo` crate, this
//! process's resident set from it too, and the peak resident set from each system's own
//! call (`getrusage`'s `ru_maxrss` on macOS, `PeakWorkingSetSize` on Windows), which
//! `sysinfo` does not give.
//!
//! Owns: the `unsafe` FFI of those two peak calls, each with its `SAFETY:` note.
//! Must not: invent a figure: what a system does not say is `None` (or 0 in
//! [`MachineMemory`], which the planner reads as unknown).

use k3_plan::MachineMemory;
use sysinfo::{MemoryRefreshKind, Pid, ProcessRefreshKind, ProcessesToUpdate, System};

fn memory() -> System {
    let mut system = System::new();
    system.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram().with_swap());
    system
}

/// This machine's memory as the planner sees it (no cgroup outside Linux).
pub fn machine_memory() -> MachineMemory {
    let system = memory();
    MachineMemory::new(system.total_memory(), system.available_memory())
}

/// Swap space: (total, free) bytes.
pub fn swap_bytes() -> Option<(u64, u64)> {
    let system = memory();
    Some((system.total_swap(), system.free_swap()))
}

/// Current resident set of this process, in bytes.
pub fn current_rss_bytes() -> Option<u64> {
    let pid = Pid::from_u32(std::process::id());
    let mut system = System::new();
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        false,
        ProcessRefreshKind::nothing().with_memory(),
    );
    system.process(pid).map(|p| p.memory())
}

/// Memory pressure as Linux's PSI measures it: unknown on this system.
pub fn memory_pressure_avg10() -> Option<f64> {
    None
}

/// Peak resident set of this process (`ru_maxrss`, in bytes on macOS).
#[cfg(target_os = "macos")]
pub fn peak_rss_bytes() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes one `rusage` into the pointer it is given, which points at
    // a zeroed, properly aligned `rusage` that lives across the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    // SAFETY: on success `getrusage` filled the struct (and it was zeroed before).
    (rc == 0).then(|| unsafe { usage.assume_init() }.ru_maxrss).and_then(|b| u64::try_from(b).ok())
}

/// Peak resident set (working set) of this process, in bytes.
#[cfg(windows)]
pub fn peak_rss_bytes() -> Option<u64> {
    use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
    use windows_sys::Win32::System::Threading::GetCurrentProcess;
    let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    let mut counters = std::mem::MaybeUninit::<PROCESS_MEMORY_COUNTERS>::zeroed();
    // SAFETY: `GetCurrentProcess` returns a pseudo-handle that needs no closing;
    // `K32GetProcessMemoryInfo` writes at most `size` bytes into `counters`, a zeroed,
    // aligned struct of exactly that size that lives across the call.
    let ok = unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), counters.as_mut_ptr(), size) };
    // SAFETY: on success the call filled the struct (and it was zeroed before).
    (ok != 0).then(|| unsafe { counters.assume_init() }.PeakWorkingSetSize as u64)
}

/// Peak resident set: unknown on this system.
#[cfg(not(any(target_os = "macos", windows)))]
pub fn peak_rss_bytes() -> Option<u64> {
    None
}
