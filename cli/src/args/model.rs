//! The flags every command that loads a model shares: the model folder and threads, the
//! memory budgets and read pattern, and how tokens are chosen. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

/// Options shared by every command that loads a model.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Model folder: config.json plus *.safetensors shards (and tokenizer files).
    #[arg(long)]
    pub model: PathBuf,
    /// Kernel threads (default: all cores). Results are identical for every value.
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// Memory budgets. Without any, every weight is resident in RAM.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// A memory preset: ultra, laptop, desktop, workstation, server, max or auto.
    #[arg(long, conflicts_with_all = ["trunk_budget", "cache_budget"])]
    pub preset: Option<String>,
    /// RAM for the trunk (pinned layers + ring), e.g. 3GB, 512MB, 1.5GiB.
    #[arg(long, value_name = "SIZE")]
    pub trunk_budget: Option<String>,
    /// RAM for the routed-expert cache, e.g. 1GB.
    #[arg(long, value_name = "SIZE")]
    pub cache_budget: Option<String>,
    /// Concurrent expert reads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub io_threads: usize,
    /// Folder of a packed trunk (`k3 pack`): with a budget, unpinned layers stream from it.
    #[arg(long, value_name = "DIR")]
    pub trunk: Option<PathBuf>,
    /// Expert-cache replacement: lru or layer-ahead.
    #[arg(long, value_name = "POLICY", default_value = "lru")]
    pub cache_policy: String,
    /// Positions of one conversation (prompt + replies) the plan reserves KV cache for; a
    /// reply that reaches it ends as "context full", a longer prompt is refused. Default:
    /// the largest the plan keeps on this machine (the preset's default context, as `k3
    /// plan` prints it).
    #[arg(long, value_name = "N", visible_alias = "max-positions")]
    pub context_length: Option<usize>,
    /// The drive's best read pattern, as saved by `k3 bench disk --save FILE`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["read_size", "read_depth"])]
    pub read_pattern: Option<PathBuf>,
    /// Size of each streamed read request, e.g. 8MiB (default 8 MiB).
    #[arg(long, value_name = "SIZE")]
    pub read_size: Option<String>,
    /// Read requests in flight together (default 8).
    #[arg(long, value_name = "N")]
    pub read_depth: Option<usize>,
    /// How trunk layers are placed: `prefix` pins the longest prefix that fits and streams
    /// the rest; `cost` chooses each layer (pinned, held coded in RAM, streamed) and the
    /// trunk/cache split by this machine's measured drive, decoder and kernel rates.
    #[arg(long, value_name = "RULE", default_value = "prefix")]
    pub residency: String,
    /// With --residency cost: the drive's read rate in GB/s instead of measuring it on
    /// --trunk's trunk.bin.
    #[arg(long, value_name = "X")]
    pub residency_disk_gbps: Option<f64>,
    /// Rates measured once by a command that loads several engines (not a flag).
    #[arg(skip)]
    pub measured_rates: Option<k3_plan::CostRates>,
}

/// How tokens are chosen.
#[derive(Args, Debug)]
pub struct SamplingArgs {
    /// Greedy decoding (the default).
    #[arg(long, conflicts_with_all = ["temperature", "top_p", "seed"])]
    pub greedy: bool,
    /// Sampling temperature: 0 is greedy, above 0 samples.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus mass in (0, 1] (with --temperature; default 1).
    #[arg(long, requires = "temperature")]
    pub top_p: Option<f32>,
    /// RNG seed for sampling (default 0).
    #[arg(long, requires = "temperature")]
    pub seed: Option<u64>,
}
