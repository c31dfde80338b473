//! `k3 pack`: the trunk's output folder and codec. No behaviour lives here.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct PackArgs {
    /// Model folder: config.json plus *.safetensors shards.
    #[arg(long)]
    pub model: PathBuf,
    /// Output folder for trunk.bin and trunk.json.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// How layers are stored: `raw`, `huffman` (bf16 high bytes entropy-coded, ~0.67 × the
    /// bytes read per streamed layer; layers it does not shrink stay raw), or `auto`
    /// (huffman where this CPU decodes ≥ 1.5 × faster than the drive reads, measured first).
    #[arg(long, default_value = "raw", value_parser = ["raw", "huffman", "auto"])]
    pub codec: String,
    /// Print one JSON object when done.
    #[arg(long)]
    pub json: bool,
}
