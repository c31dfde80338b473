//! `k3 synth`: the synthetic checkpoint's preset, config file and single-value overrides.
//! No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

/// `k3 synth`: a preset, then `--config`, then the single-value flags, then `--seed`.
#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Output folder; created, or must be empty.
    #[arg(long)]
    pub out: PathBuf,
    /// `tiny` (the shape of fixtures/tiny-mxfp4) or `k3-mid` (real K3 layer sizes, 4 layers, ~9.2 GB).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// JSON file of config values over the preset (config.json names, flat or nested; also `seed`, `expert_storage`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seed of every weight (same seed, same bytes).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Decoder layers (MLA layers become every 4th plus the last unless --full-attn-layers is given).
    #[arg(long, value_name = "N")]
    pub layers: Option<usize>,
    /// One-based MLA layers, comma-separated.
    #[arg(long, value_name = "CSV")]
    pub full_attn_layers: Option<String>,
    /// hidden_size.
    #[arg(long, value_name = "N")]
    pub hidden: Option<usize>,
    /// vocab_size (768 also copies the tiny tokenizer files).
    #[arg(long, value_name = "N")]
    pub vocab: Option<usize>,
    /// Routed experts per MoE layer.
    #[arg(long, value_name = "N")]
    pub experts: Option<usize>,
    /// Experts per token.
    #[arg(long, value_name = "N")]
    pub top_k: Option<usize>,
    /// Shared experts (fused).
    #[arg(long, value_name = "N")]
    pub shared_experts: Option<usize>,
    /// Latent width of the routed experts (routed_expert_hidden_size).
    #[arg(long, value_name = "N")]
    pub latent: Option<usize>,
    /// moe_intermediate_size.
    #[arg(long, value_name = "N")]
    pub expert_intermediate: Option<usize>,
    /// intermediate_size of the dense FFN.
    #[arg(long, value_name = "N")]
    pub dense_intermediate: Option<usize>,
    /// KDA heads.
    #[arg(long, value_name = "N")]
    pub kda_heads: Option<usize>,
    /// KDA head dim.
    #[arg(long, value_name = "N")]
    pub kda_head_dim: Option<usize>,
    /// MLA heads.
    #[arg(long, value_name = "N")]
    pub mla_heads: Option<usize>,
    /// attn_res_block_size.
    #[arg(long, value_name = "N")]
    pub block_size: Option<usize>,
    /// Store routed experts as BF16 `weight` tensors instead of MXFP4.
    #[arg(long)]
    pub bf16_experts: bool,
    /// Print the exact size and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}
