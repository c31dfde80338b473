//! `k3 sim-cache`: the recorded trace and the cache sizes replayed. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct SimCacheArgs {
    /// The trace: headerless little-endian int32 (layer, expert) pairs (`expert_trace.bin`).
    pub trace: PathBuf,
    /// Cache sizes in whole-expert slots, comma-separated (default: the presets' slot counts).
    #[arg(long, value_name = "CSV", default_value = "56,570,740,1700")]
    pub capacity: String,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}
