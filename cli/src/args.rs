//! Command-line grammar (clap derive). No behaviour lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "k3", version, about = "Run Kimi K3 (or a same-graph checkpoint) on this machine")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate tokens after a prompt.
    Run(RunArgs),
    /// One teacher-forced pass: the arg-max (and optionally logits) at every position.
    Score(ScoreArgs),
}

/// Options shared by every command that loads a model.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Model folder: config.json plus *.safetensors shards.
    #[arg(long)]
    pub model: PathBuf,
    /// Kernel threads (default: all cores). Results are identical for every value.
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Prompt token ids, comma-separated.
    #[arg(long, group = "input", value_name = "CSV")]
    pub ids: Option<String>,
    /// Prompt text (needs the model's tokenizer files).
    #[arg(long, group = "input")]
    pub prompt: Option<String>,
    /// File holding the prompt text.
    #[arg(long, group = "input")]
    pub prompt_file: Option<PathBuf>,
    /// Tokens to generate.
    #[arg(long, value_name = "N")]
    pub gen: usize,
    /// Greedy decoding (the default).
    #[arg(long, conflicts_with_all = ["temperature", "top_p", "seed"])]
    pub greedy: bool,
    /// Sampling temperature (> 0); enables sampling.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus mass in (0, 1] (with --temperature; default 1).
    #[arg(long, requires = "temperature")]
    pub top_p: Option<f32>,
    /// RNG seed for sampling (default 0).
    #[arg(long, requires = "temperature")]
    pub seed: Option<u64>,
    /// Token ids that end generation, comma-separated.
    #[arg(long, value_name = "CSV")]
    pub stop_ids: Option<String>,
    /// Recompute the whole sequence at every step instead of carrying state.
    #[arg(long)]
    pub full_recompute: bool,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the logits that chose each generated token as little-endian f32 rows.
    #[arg(long, value_name = "FILE")]
    pub dump_logits: Option<PathBuf>,
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
