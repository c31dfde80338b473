//! Giving freed memory back to the operating system.
//!
//! Owns: [`return_freed_memory`], called after a replan shrinks the residency. Freed
//! expert slots and trunk layers are heap blocks of a few hundred KB to a few GB; glibc
//! keeps freed blocks below its (self-raising) mmap threshold in its arenas, so without
//! this the resident set would stay at the old plan's size.
//! Must not: be called while weights are being read (it walks every arena under locks).
//! Also owns [`bound_heap_retention`]: transient work buffers of a prefill chunk (tens of
//! MB each) would otherwise raise glibc's mmap threshold as they are freed and be kept in
//! the arenas afterwards, so the resident set would grow past the plan with prompt length.

/// Returns free heap pages of every malloc arena to the OS (glibc's `malloc_trim`);
/// elsewhere a no-op.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes a plain integer (the padding to keep at the top of the
    // heap) and only releases pages malloc itself holds free; it touches no memory we own.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Blocks from this size up are always mapped on their own and unmapped when freed.
pub const HEAP_MMAP_THRESHOLD: usize = 1 << 20;

/// Fixes glibc's mmap threshold at [`HEAP_MMAP_THRESHOLD`] (its default rises to the
/// largest block freed, up to 32 MiB, after which such blocks stay in the arenas when
/// freed); elsewhere a no-op. Called once when an engine loads.
pub fn bound_heap_retention() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: `mallopt` takes two plain integers and only changes malloc's own tuning;
        // it touches no memory we own.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD as libc::c_int);
        }
    });
}
