//! `k3 bench agent` and `k3 bench constrain`: the benchmarks of chat features (the kept
//! conversation state, constrained decoding). No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

use crate::args::ModelArgs;

#[derive(Args, Debug)]
pub struct BenchAgentArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Turns of the loop.
    #[arg(long, default_value_t = 10)]
    pub turns: usize,
    /// Tokens of each new message after the first (a tool result's size).
    #[arg(long, default_value_t = 120)]
    pub result_tokens: usize,
    /// Tokens of each reply.
    #[arg(long, default_value_t = 8)]
    pub reply_tokens: usize,
    /// The first turn whose history is also prefilled whole, for the comparison (the
    /// replays are the long part on a large model).
    #[arg(long, default_value_t = 1)]
    pub replay_from: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchConstrainArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// A folder with Moonshot's released `tiktoken.model` (K3's ranks).
    #[arg(long, value_name = "DIR", default_value = "../shared/fixtures/released/kimi-tokenizer")]
    pub k3_vocabulary: PathBuf,
    /// Tokens of the constrained reply.
    #[arg(long, default_value_t = 400)]
    pub tokens: usize,
    /// Rounds (the median is printed).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
