//! `k3 bench stream`, `speculate`, `context` and `batch`: the benchmarks that decode with a
//! model. No behaviour lives here.

use clap::Args;

use crate::args::ModelArgs;

#[derive(Args, Debug)]
pub struct BenchStreamArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Decode steps measured after the prompt.
    #[arg(long, default_value_t = 3)]
    pub tokens: usize,
    /// A second packed trunk of the same model (e.g. packed with --codec huffman): the two
    /// are run alternately, each against its own floor, and their ratio printed.
    #[arg(long, value_name = "DIR", requires = "trunk")]
    pub versus: Option<std::path::PathBuf>,
    /// The same trunk under this `--residency` rule too (e.g. `cost` against the default
    /// `prefix`): both alternated, each against its own floor, with the ratio.
    #[arg(long, value_name = "RULE", conflicts_with = "versus")]
    pub versus_residency: Option<String>,
    /// With --versus or --versus-residency: rounds, each running both (the order alternating).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchSpeculateArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Tokens generated per run.
    #[arg(long, default_value_t = 24)]
    pub tokens: usize,
    /// Most draft tokens per verify pass.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=32))]
    pub speculate: u8,
    /// Rounds; each runs both prompts serially and speculatively, the order alternating.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchContextArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Context lengths to decode at, comma-separated; ratios are to the first.
    #[arg(long, value_delimiter = ',', default_value = "1024,8192,32768")]
    pub contexts: Vec<usize>,
    /// Tokens generated per run (the first, after the prompt token, is not timed as decode).
    #[arg(long, default_value_t = 4)]
    pub tokens: usize,
    /// Rounds; each decodes at every context, the order alternating.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchBatchArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Batch sizes to measure, comma-separated (each with a freshly loaded engine, so no
    /// size starts with another's warm expert cache).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub sizes: Vec<usize>,
    /// Prompt tokens of each conversation (prefilled together before the decode steps).
    #[arg(long, default_value_t = 16)]
    pub prompt_tokens: usize,
    /// Decode steps measured after the prompts; the median step is reported.
    #[arg(long, default_value_t = 4)]
    pub tokens: usize,
    /// Each conversation on a thread of its own through `Engine::generate`, as `k3 serve
    /// --batch` runs them (the engine's step gate shares their passes), timed from when all
    /// have their first token; without it one driver steps them together.
    #[arg(long)]
    pub concurrent: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
