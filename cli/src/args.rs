//! Command-line grammar (clap derive): the command tree here, each command's flags in
//! `args/<command>.rs`. No behaviour lives here.

use clap::{Parser, Subcommand};

mod bench;
mod chat;
mod doctor;
mod download;
mod forecast;
mod model;
mod pack;
mod plan;
mod run;
mod serve;
mod sim_cache;
mod synth;
mod text;

pub use bench::*;
pub use chat::*;
pub use doctor::*;
pub use download::*;
pub use forecast::*;
pub use model::*;
pub use pack::*;
pub use plan::*;
pub use run::*;
pub use serve::*;
pub use sim_cache::*;
pub use synth::*;
pub use text::*;

#[derive(Parser, Debug)]
#[command(name = "k3", version, about = "Run Kimi K3 (or a same-graph checkpoint) on this machine")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate tokens after a prompt (raw continuation, no chat template).
    Run(RunArgs),
    /// One teacher-forced pass: the arg-max (and optionally logits) at every position.
    Score(ScoreArgs),
    /// Text to token ids with the model folder's tokenizer files.
    Tokenize(TokenizeArgs),
    /// Token ids to text with the model folder's tokenizer files.
    Detokenize(DetokenizeArgs),
    /// Interactive chat (XTML template, multi-turn, state kept between turns).
    Chat(ChatArgs),
    /// The local OpenAI-compatible API on 127.0.0.1 (chat, completions, models, health).
    Serve(ServeArgs),
    /// Print the memory plan for a budget (pinned layers, ring, cache slots, overhead).
    Plan(PlanArgs),
    /// Forecast seconds per token for every preset (and a custom budget) on this machine.
    Forecast(ForecastArgs),
    /// Pack every layer's trunk into one aligned trunk.bin + trunk.json for streaming.
    Pack(PackArgs),
    /// Benchmarks that print ratios against this machine's limits, measured in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Replay a recorded expert trace against cache policies (offline; no model needed).
    SimCache(SimCacheArgs),
    /// Write a synthetic checkpoint with the released K3 tensor graph, at any size.
    Synth(SynthArgs),
    /// Download a checkpoint from the Hugging Face hub: pinned, resumable, verified; then
    /// pack its trunk and open it once.
    Download(DownloadArgs),
    /// Re-hash a downloaded store against its manifest and name every bad file.
    Verify(VerifyArgs),
    /// This machine as the engine sees it: CPU, memory, drives, verdicts, a preset.
    Doctor(DoctorArgs),
}
