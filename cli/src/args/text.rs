//! `k3 tokenize` and `k3 detokenize`: the tokenizer alone. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct TokenizeArgs {
    /// Folder holding tiktoken.model and tokenizer_config.json (no weights needed).
    #[arg(long)]
    pub model: PathBuf,
    /// The text; added-token strings in it become their ids.
    #[arg(long, group = "source", required = true)]
    pub text: Option<String>,
    /// A file holding the text (UTF-8).
    #[arg(long, group = "source", required = true)]
    pub text_file: Option<PathBuf>,
    /// Print `{"ids": [...]}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct DetokenizeArgs {
    /// Folder holding tiktoken.model and tokenizer_config.json (no weights needed).
    #[arg(long)]
    pub model: PathBuf,
    /// Token ids, comma-separated.
    #[arg(long, value_name = "CSV")]
    pub ids: String,
    /// Print `{"text": ..., "bytes": [...]}` (bytes as given, even when not valid UTF-8).
    #[arg(long)]
    pub json: bool,
}
