//! `k3 forecast`: the model, drive, budgets and threads a forecast is made for. No
//! behaviour lives here.

use std::path::PathBuf;

use clap::Args;

/// `k3 forecast`: the plan and a seconds-per-token range for each preset.
#[derive(Args, Debug)]
pub struct ForecastArgs {
    /// Model folder (only headers are read); without it, the released Kimi K3 as the spec's
    /// tensor catalogue sizes it, with a packed trunk.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Packed trunk of --model (`k3 pack`): unpinned layers stream from it.
    #[arg(long, value_name = "DIR", requires = "model")]
    pub trunk: Option<PathBuf>,
    /// The drive's read bandwidth in GB/s (10^9 bytes per second).
    #[arg(long, value_name = "X", conflicts_with = "disk")]
    pub disk_gbps: Option<f64>,
    /// Measure the bandwidth with a short O_DIRECT sweep of the large files under this
    /// folder (or of a scratch file written there). Without --disk or --disk-gbps a
    /// conservative stated figure is used.
    #[arg(long, value_name = "DIR")]
    pub disk: Option<PathBuf>,
    /// Positions the plans reserve KV cache for.
    #[arg(long, value_name = "N", default_value_t = k3_engine::DEFAULT_CONTEXT_LENGTH)]
    pub context_length: usize,
    /// Also forecast this trunk budget (pinned layers + ring), e.g. 3GB.
    #[arg(long, value_name = "SIZE")]
    pub trunk_budget: Option<String>,
    /// Also forecast this expert-cache budget, e.g. 1GB.
    #[arg(long, value_name = "SIZE")]
    pub cache_budget: Option<String>,
    /// Threads the kernels are measured with (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Concurrent expert reads the plans provide buffers for.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub io_threads: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
