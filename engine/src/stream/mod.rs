//! Streaming weights from disk under a memory plan: the expert cache, the packed trunk and
//! its ring, and the counters that report what streaming did.
//!
//! Owns: everything that decides WHEN weight bytes are in RAM. Must not: change what is
//! computed or in which order (the budget changes only the speed).

pub mod expert_cache;
pub mod expert_dir;
pub mod expert_sums;
pub mod footprint;
pub mod metrics;
pub mod plan;
pub mod replacement;
pub(crate) mod residency;
pub mod ring;
pub mod trunk_codec;
pub mod trunk_layout;
pub mod trunk_manifest;
pub mod trunk_pack;
pub mod trunk_packer;
pub mod trunk_pieces;
pub mod trunk_stream;

/// How often a wait for a read in flight (the trunk's ring, the expert cache) looks at the
/// generation's cancel token.
pub(crate) const STOP_TICK: std::time::Duration = std::time::Duration::from_millis(10);

pub use expert_cache::ExpertCache;
pub use metrics::{peak_rss_bytes, Counters, StreamMetrics};
pub use replacement::CachePolicy;
