//! `io::sysinfo` on macOS and Windows: memory and swap from the `sysinfo` crate, this
//! process's resident set from it too, and the peak resident set from each system's own
//! call (`getrusage`'s `ru_maxrss` on macOS, `PeakWorkingSetSize` on Windows), which
//! `sysinfo` does not give.
//!
//! Memory pressure is each system's own measure (`io::pressure`): macOS's pressure level
//! (`sysctlbyname`), Windows' commit charge (`GlobalMemoryStatusEx`), which `sysinfo`
//! gives neither of. The RAM the macOS compressor occupies is `vm.compressor_bytes_used`;
//! Windows has no documented call for its compression store's size, so it is unknown there.
//! Owns: the `unsafe` FFI of those calls, each with its `SAFETY:` note.
//! Must not: invent a figure: what a system does not say is `None` (or 0 in
//! [`MachineMemory`], which the planner reads as unknown).

use k3_plan::MachineMemory;

use crate::pressure::{self, MemoryPressure};
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

/// macOS's memory-pressure level (`sysctl kern.memorystatus_vm_pressure_level`).
#[cfg(target_os = "macos")]
pub fn memory_pressure() -> Option<MemoryPressure> {
    let mut value: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>();
    // SAFETY: the name is a NUL-terminated C string; `sysctlbyname` writes at most `size`
    // bytes into `value`, an aligned `c_int` of exactly that size that lives across the
    // call, and sets `size` to what it wrote; no new value is given (null, 0).
    let rc = unsafe {
        libc::sysctlbyname(
            c"kern.memorystatus_vm_pressure_level".as_ptr(),
            (&mut value as *mut libc::c_int).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    (rc == 0 && size == std::mem::size_of::<libc::c_int>())
        .then(|| pressure::level_of(value))
        .flatten()
        .map(MemoryPressure::Level)
}

/// The RAM the macOS compressor occupies (`sysctl vm.compressor_bytes_used`, a 64-bit
/// count of bytes).
#[cfg(target_os = "macos")]
pub fn compressed_bytes() -> Option<u64> {
    let mut value: u64 = 0;
    let mut size = std::mem::size_of::<u64>();
    // SAFETY: the name is a NUL-terminated C string; `sysctlbyname` writes at most `size`
    // bytes into `value`, an aligned `u64` of exactly that size that lives across the
    // call, and sets `size` to what it wrote; no new value is given (null, 0).
    let rc = unsafe {
        libc::sysctlbyname(
            c"vm.compressor_bytes_used".as_ptr(),
            (&mut value as *mut u64).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    (rc == 0 && size == std::mem::size_of::<u64>()).then_some(value)
}

/// The RAM compressed memory occupies: unknown on this system (Windows' compression store
/// has no documented size query).
#[cfg(not(target_os = "macos"))]
pub fn compressed_bytes() -> Option<u64> {
    None
}

/// Windows' commit charge against its limit (`GlobalMemoryStatusEx`: the page-file
/// figures are the commit limit and what is left of it).
#[cfg(windows)]
pub fn memory_pressure() -> Option<MemoryPressure> {
    use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
    let mut status = std::mem::MaybeUninit::<MEMORYSTATUSEX>::zeroed();
    // SAFETY: the struct is zeroed and aligned, lives across the call, and its `dwLength`
    // is set to its size before the call, as `GlobalMemoryStatusEx` requires.
    let ok = unsafe {
        (*status.as_mut_ptr()).dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
        GlobalMemoryStatusEx(status.as_mut_ptr())
    };
    if ok == 0 {
        return None;
    }
    // SAFETY: on success the call filled the struct (and it was zeroed before).
    let status = unsafe { status.assume_init() };
    pressure::commit_percent(status.ullTotalPageFile, status.ullAvailPageFile).map(MemoryPressure::CommitPercent)
}

/// Memory pressure: unknown on this system.
#[cfg(not(any(target_os = "macos", windows)))]
pub fn memory_pressure() -> Option<MemoryPressure> {
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

#[cfg(test)]
mod tests {
    /// Windows (under Wine in CI) answers `GlobalMemoryStatusEx`: a commit charge between
    /// 0 and 100 % of its limit.
    #[cfg(windows)]
    #[test]
    fn windows_reports_its_commit_charge_as_the_pressure_reading() {
        match super::memory_pressure() {
            Some(super::MemoryPressure::CommitPercent(c)) => assert!((0.0..=100.0).contains(&c), "{c}"),
            other => panic!("expected a commit charge, got {other:?}"),
        }
    }
}
