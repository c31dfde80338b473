//! `k3 run` and `k3 score`: the model run on a prompt's ids. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

use super::{ModelArgs, SamplingArgs};

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Prompt token ids, comma-separated.
    #[arg(long, group = "input", value_name = "CSV")]
    pub ids: Option<String>,
    /// Prompt text (tokenised with the model folder's tokenizer files).
    #[arg(long, group = "input")]
    pub prompt: Option<String>,
    /// File holding the prompt text.
    #[arg(long, group = "input")]
    pub prompt_file: Option<PathBuf>,
    /// Tokens to generate.
    #[arg(long, value_name = "N")]
    pub gen: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Token ids that end generation, comma-separated.
    #[arg(long, value_name = "CSV")]
    pub stop_ids: Option<String>,
    /// Recompute the whole sequence at every step instead of carrying state.
    #[arg(long, conflicts_with = "speculate")]
    pub full_recompute: bool,
    /// Exact speculative decoding: draft up to N tokens by prompt lookup and verify them
    /// in one pass (the same tokens and logits as without; 0 = off, at most 32).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=32))]
    pub speculate: u8,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the logits that chose each generated token as little-endian f32 rows.
    #[arg(long, value_name = "FILE")]
    pub dump_logits: Option<PathBuf>,
    /// Record every routed-expert request as little-endian int32 (layer, expert) pairs.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ScoreArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Token ids, comma-separated.
    #[arg(long, value_name = "CSV")]
    pub ids: String,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write every position's logits, `[n × vocab]` little-endian f32.
    #[arg(long, value_name = "FILE")]
    pub dump_logits: Option<PathBuf>,
}
