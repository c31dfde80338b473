//! `k3 chat`: the interactive conversation's flags. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

use super::{ModelArgs, SamplingArgs};

#[derive(Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// System prompt for the conversation (`/system TEXT` changes it).
    #[arg(long)]
    pub system: Option<String>,
    /// Thinking mode: the reply starts in the think channel.
    #[arg(long)]
    pub thinking: bool,
    /// Largest reply, in tokens.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_tokens: usize,
    /// Exact speculative decoding: draft up to N tokens by prompt lookup and verify them
    /// in one pass (the same replies as without; 0 = off, at most 32).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=32))]
    pub speculate: u8,
    /// Keep the conversation and its engine state in FILE: continued from it when it
    /// exists (the next message prefills alone), saved to it after every reply.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}
