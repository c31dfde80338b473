//! `k3 bench …`: the benchmarks' command-line grammar (clap derive). No behaviour lives here.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ModelArgs;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Kernels at the real K3 dimensions vs the memory read bandwidth.
    Kernels(BenchKernelsArgs),
    /// Streamed decode vs the honest I/O floor (bytes per token ÷ this drive's best measured
    /// O_DIRECT bandwidth) and the compute time.
    Stream(BenchStreamArgs),
    /// This drive read as the engine reads experts: O_DIRECT, one expert per read, at queue
    /// depth 1 and 16 (`--sweep`: request size × requests in flight).
    Disk(BenchDiskArgs),
    /// Exact speculative decoding vs serial decoding on a repetitive and a non-repetitive
    /// prompt, drafting by prompt lookup and by replaying serial decoding's reply (every
    /// draft right, or every draft wrong): tokens per second, acceptance, and the tokens
    /// checked equal.
    Speculate(BenchSpeculateArgs),
    /// The trunk codec on one packed layer: size ratio, decode GB/s per core, and the layer
    /// streamed coded vs a raw O_DIRECT read of the same layer.
    Codec(BenchCodecArgs),
    /// Decode seconds per token at several context lengths (a real 16-token prefill whose
    /// positions are repeated up to each context), the median of the rounds and each
    /// context's ratio to the first.
    Context(BenchContextArgs),
    /// Constrained decoding's cost: a mask per token at the model's vocabulary and at K3's
    /// (the released Kimi ranks), against a decode step of the model, in one run.
    Constrain(BenchConstrainArgs),
    /// An agent loop's time to first token per turn with the conversation's kept engine
    /// state against the whole history prefilled again, in one run.
    Agent(BenchAgentArgs),
    /// Several conversations decoded in one pass: aggregate tokens per second at each
    /// batch size, each conversation's seconds per token and the bytes read per token, the
    /// ratio to one conversation, and every conversation's tokens checked equal across sizes.
    Batch(BenchBatchArgs),
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
pub struct BenchCodecArgs {
    /// A trunk packed raw (`k3 pack` without --codec): its layer is read, coded and decoded.
    #[arg(long, value_name = "DIR")]
    pub trunk: PathBuf,
    /// Which layer.
    #[arg(long, default_value_t = 0)]
    pub layer: usize,
    /// Threads for coding and for the all-core decode (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
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
pub struct BenchDiskArgs {
    /// Files to read (shards, trunk.bin), or a folder on the drive for a scratch file.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A model folder: its *.safetensors shards are read (read-only).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    /// Seconds each queue depth (1, then 16) reads for.
    #[arg(long, value_name = "N", default_value_t = 20.0)]
    pub seconds: f64,
    /// Size of the scratch file written into a folder given with --path (default 2GiB; 4GB
    /// with --sweep).
    #[arg(long, value_name = "SIZE")]
    pub scratch_size: Option<String>,
    /// Instead: sweep request size × requests in flight (the engine's read pattern).
    #[arg(long)]
    pub sweep: bool,
    /// --sweep: request sizes in MiB (default 1,2,4,8,16,32,64).
    #[arg(long, value_name = "CSV", requires = "sweep")]
    pub sizes: Option<String>,
    /// Queue depths (default 1,16; with --sweep, requests in flight: 1,2,4,8,16,32).
    #[arg(long, value_name = "CSV")]
    pub depths: Option<String>,
    /// --sweep: bytes each point reads (default 512MB).
    #[arg(long, value_name = "SIZE", requires = "sweep")]
    pub bytes_per_point: Option<String>,
    /// --sweep: write the best point for --read-pattern.
    #[arg(long, value_name = "FILE", requires = "sweep")]
    pub save: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

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
pub struct BenchKernelsArgs {
    /// Threads for the "all threads" runs (default: all cores); 1 thread is always measured.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Timed repetitions per case (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Kernel bodies to time: portable, avx2, avx512 or neon (default: the fastest this CPU runs).
    /// The memory floor is always measured with the fastest.
    #[arg(long, value_parser = clap::value_parser!(k3_engine::kernels::Isa))]
    pub isa: Option<k3_engine::kernels::Isa>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
