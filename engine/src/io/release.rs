//! Giving freed memory back to the operating system.
//!
//! Owns: [`return_freed_memory`], called after a replan shrinks the residency. Freed
//! expert slots and trunk layers are heap blocks of a few hundred KB to a few GB; glibc
//! keeps freed blocks below its (self-raising) mmap threshold in its arenas, so without
//! this the resident set would stay at the old plan's size.
//! Must not: be called while weights are being read (it walks every arena under locks).

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
