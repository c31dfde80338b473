//! `k3-io`: reading a checkpoint from the drive. [`config`] (strict `config.json`, spec §2,
//! over the strict JSON of [`json`]), [`format`] (strict safetensors shards and the tensor
//! index over a model folder) and I/O for streaming weights: aligned buffers,
//! reads that bypass the page cache, and the one crate where systems differ. The engine
//! re-exports it (`k3_engine::io`, `k3_engine::format`, `k3_engine::config`, `k3_engine::json`);
//! the store uses it without the engine.
//!
//! Owns: [`blob`] (aligned memory weights are read into and computed from), [`busy`] (the
//! time the drive had a read in flight), [`direct`]
//! (positioned reads that bypass the cache, with a buffered fallback), [`os`] (what
//! differs by system: Linux O_DIRECT, macOS F_NOCACHE, Windows FILE_FLAG_NO_BUFFERING,
//! positioned reads and writes, links, folder sync), [`reader`] (the one I/O engine:
//! large reads split into aligned pieces in flight together, per the drive's measured
//! pattern), [`sysinfo`] (the machine's memory and this process's resident set, as plain
//! numbers), [`pressure`] (memory pressure as each system measures it), [`release`] (freed memory handed back to the OS after a replan) and
//! [`storage`] (the seam where reads and the pack's writes meet the OS, replaceable by
//! tests that inject faults), and [`pack`] (the interface of the engine's trunk packer,
//! which the store's install pipeline runs), and [`provenance`] (a verified file's record
//! and the SHA-256 a checkpoint's own records give a shard), and [`segment_sums`] (a
//! shard's segment CRC32Cs, made while it downloads, that name its experts' CRCs).
//! Must not: be bypassed: every weight byte streamed at run time is read here.
//! Easy to break: alignment of buffer, offset and length for O_DIRECT and NO_BUFFERING.

pub mod blob;
pub mod busy;
mod bypass;
mod cancel;
pub mod config;
pub mod direct;
mod error;
pub mod format;
pub mod json;
pub mod os;
pub mod pack;
pub mod pressure;
pub mod provenance;
pub mod reader;
pub mod release;
pub mod segment_sums;
pub mod storage;
pub mod sysinfo;

pub use blob::{Blob, BlobPool, ByteView};
pub use busy::BusyClock;
pub use cancel::CancelToken;
pub use direct::DirectFile;
pub use error::{names_nothing_usable, Error, Result};
pub use os::CacheBypass;
pub use pack::{PackProgress, PackStage, PackedTrunk, TrunkPacker};
pub use reader::{Checksum, ReadPattern, Reader, Urgency, WindowRead};
pub use storage::{OsRead, OsStorage, PositionedRead, StoredFile, WriteStorage};
