//! `k3 download` and `k3 verify`: fetching a store from the hub, and re-hashing it. No
//! behaviour lives here.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct DownloadArgs {
    /// Hugging Face repository id.
    #[arg(long, default_value = "moonshotai/Kimi-K3")]
    pub repo: String,
    /// Store folder: the files land here at their repository paths (`hf download
    /// --local-dir` layout), with k3's manifest and journals in `.k3-desktop/`.
    #[arg(long, value_name = "STORE")]
    pub to: PathBuf,
    /// Where the packed trunk goes (default: STORE/.k3-desktop/trunk). Put it on the
    /// fastest drive.
    #[arg(long, value_name = "DIR")]
    pub trunk_to: Option<PathBuf>,
    /// Branch, tag or commit, pinned once to a commit (default: K3_REVISION or main).
    #[arg(long)]
    pub revision: Option<String>,
    /// Hub endpoint (default: HF_ENDPOINT or https://huggingface.co).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Files fetched at once.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
    /// Bytes hashed and journaled as one record, written one chunk behind the network.
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub chunk_size: String,
    /// Bytes made durable with one fdatasync; at most this much and one chunk per file are
    /// fetched again after a crash or power cut.
    #[arg(long, default_value = "256MiB", value_name = "SIZE")]
    pub sync_size: String,
    /// First wait after a transient failure, in seconds (doubling to --retry-cap).
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub retry_base: f64,
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub retry_cap: f64,
    /// Seconds without data (or with a trickle) before reconnecting.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub stall_timeout: f64,
    /// Seconds between free-space checks while paused on a full drive.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub space_poll: f64,
    /// Stop after the files verify: no trunk packing, no first load.
    #[arg(long)]
    pub no_pack: bool,
    /// Events as JSON lines on stdout instead of a progress bar.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// A store folder written by `k3 download`.
    #[arg(long, value_name = "STORE")]
    pub model: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
