//! I/O for streaming weights: aligned buffers, O_DIRECT reads, and the page cache kept out
//! of the way.
//!
//! Owns: [`blob`] (aligned memory weights are read into and computed from) and [`direct`]
//! (O_DIRECT positioned reads with a buffered fallback), and [`sysinfo`] (the machine's
//! memory and this process's resident set, as plain numbers), and [`release`] (freed
//! memory handed back to the OS after a replan).
//! Must not: be bypassed: every weight byte streamed at run time is read here.
//! Easy to break: alignment of buffer, offset and length for O_DIRECT.

pub mod blob;
pub mod direct;
pub mod release;
pub mod sysinfo;

pub use blob::{Blob, ByteView};
pub use direct::DirectFile;
