//! Command-line grammar (clap derive). No behaviour lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod bench;
pub use bench::*;

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

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Folders to judge as a model store (default: every mounted volume).
    #[arg(long = "path", value_name = "DIR")]
    pub paths: Vec<PathBuf>,
    /// Print one JSON object (cpu, memory, drives, verdicts, recommended_preset,
    /// recommended_context, kv_bytes_per_position).
    #[arg(long)]
    pub json: bool,
}

/// Options shared by every command that loads a model.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Model folder: config.json plus *.safetensors shards (and tokenizer files).
    #[arg(long)]
    pub model: PathBuf,
    /// Kernel threads (default: all cores). Results are identical for every value.
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// Memory budgets. Without any, every weight is resident in RAM.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// A memory preset: ultra, laptop, desktop, workstation, server, max or auto.
    #[arg(long, conflicts_with_all = ["trunk_budget", "cache_budget"])]
    pub preset: Option<String>,
    /// RAM for the trunk (pinned layers + ring), e.g. 3GB, 512MB, 1.5GiB.
    #[arg(long, value_name = "SIZE")]
    pub trunk_budget: Option<String>,
    /// RAM for the routed-expert cache, e.g. 1GB.
    #[arg(long, value_name = "SIZE")]
    pub cache_budget: Option<String>,
    /// Concurrent expert reads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub io_threads: usize,
    /// Folder of a packed trunk (`k3 pack`): with a budget, unpinned layers stream from it.
    #[arg(long, value_name = "DIR")]
    pub trunk: Option<PathBuf>,
    /// Expert-cache replacement: lru or layer-ahead.
    #[arg(long, value_name = "POLICY", default_value = "lru")]
    pub cache_policy: String,
    /// Positions of one conversation (prompt + replies) the plan reserves KV cache for; a
    /// reply that reaches it ends as "context full", a longer prompt is refused. Default:
    /// the largest the plan keeps on this machine (the preset's default context, as `k3
    /// plan` prints it).
    #[arg(long, value_name = "N", visible_alias = "max-positions")]
    pub context_length: Option<usize>,
    /// The drive's best read pattern, as saved by `k3 bench disk --save FILE`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["read_size", "read_depth"])]
    pub read_pattern: Option<PathBuf>,
    /// Size of each streamed read request, e.g. 8MiB (default 8 MiB).
    #[arg(long, value_name = "SIZE")]
    pub read_size: Option<String>,
    /// Read requests in flight together (default 8).
    #[arg(long, value_name = "N")]
    pub read_depth: Option<usize>,
    /// How trunk layers are placed: `prefix` pins the longest prefix that fits and streams
    /// the rest; `cost` chooses each layer (pinned, held coded in RAM, streamed) and the
    /// trunk/cache split by this machine's measured drive, decoder and kernel rates.
    #[arg(long, value_name = "RULE", default_value = "prefix")]
    pub residency: String,
    /// With --residency cost: the drive's read rate in GB/s instead of measuring it on
    /// --trunk's trunk.bin.
    #[arg(long, value_name = "X")]
    pub residency_disk_gbps: Option<f64>,
    /// Rates measured once by a command that loads several engines (not a flag).
    #[arg(skip)]
    pub measured_rates: Option<k3_plan::CostRates>,
}

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

/// How tokens are chosen.
#[derive(Args, Debug)]
pub struct SamplingArgs {
    /// Greedy decoding (the default).
    #[arg(long, conflicts_with_all = ["temperature", "top_p", "seed"])]
    pub greedy: bool,
    /// Sampling temperature: 0 is greedy, above 0 samples.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus mass in (0, 1] (with --temperature; default 1).
    #[arg(long, requires = "temperature")]
    pub top_p: Option<f32>,
    /// RNG seed for sampling (default 0).
    #[arg(long, requires = "temperature")]
    pub seed: Option<u64>,
}

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
#[command(group(clap::ArgGroup::new("subject").required(true).args(["model", "footprint", "released"])))]
pub struct PlanArgs {
    /// Model folder: config.json plus *.safetensors shards (only headers are read).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A footprint as JSON (`k3 plan --print-footprint`, or what the app sends the page)
    /// instead of a model folder.
    #[arg(long, value_name = "FILE")]
    pub footprint: Option<PathBuf>,
    /// The released Kimi K3 as the spec's tensor catalogue sizes it, instead of a folder.
    #[arg(long)]
    pub released: bool,
    /// With --footprint or --released: plan as if the trunk were packed (layers stream).
    #[arg(long, conflicts_with = "model")]
    pub streamed_trunk: bool,
    /// Print the footprint as JSON (the planner's input) instead of a plan.
    #[arg(long)]
    pub print_footprint: bool,
    /// The machine's MemTotal to plan for (e.g. 64GB) instead of this machine's; with
    /// --mem-available.
    #[arg(long, value_name = "SIZE", requires = "mem_available")]
    pub mem_total: Option<String>,
    /// The machine's MemAvailable to plan for (e.g. 48GB); with --mem-total.
    #[arg(long, value_name = "SIZE", requires = "mem_total")]
    pub mem_available: Option<String>,
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// Print one JSON object: the plan, or `{"error": {"kind": …, its numbers, "message"}}`
    /// (k3-plan-wasm's schema, the wasm planner's too).
    #[arg(long)]
    pub json: bool,
}

/// `k3 forecast`: the plan and a seconds-per-token range for each preset.
#[derive(Args, Debug)]
pub struct ForecastArgs {
    /// Model folder (only headers are read); without it, the released Kimi K3 as the spec's
    /// tensor catalogue sizes it, with a packed trunk.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Packed trunk of --model (`k3 pack`): unpinned layers stream from it.
    #[arg(long, value_name = "DIR", requires = "model")]
    pub trunk: Option<PathBuf>,
    /// The drive's read bandwidth in GB/s (10^9 bytes per second).
    #[arg(long, value_name = "X", conflicts_with = "disk")]
    pub disk_gbps: Option<f64>,
    /// Measure the bandwidth with a short O_DIRECT sweep of the large files under this
    /// folder (or of a scratch file written there). Without --disk or --disk-gbps a
    /// conservative stated figure is used.
    #[arg(long, value_name = "DIR")]
    pub disk: Option<PathBuf>,
    /// Positions the plans reserve KV cache for.
    #[arg(long, value_name = "N", default_value_t = k3_engine::DEFAULT_CONTEXT_LENGTH)]
    pub context_length: usize,
    /// Also forecast this trunk budget (pinned layers + ring), e.g. 3GB.
    #[arg(long, value_name = "SIZE")]
    pub trunk_budget: Option<String>,
    /// Also forecast this expert-cache budget, e.g. 1GB.
    #[arg(long, value_name = "SIZE")]
    pub cache_budget: Option<String>,
    /// Threads the kernels are measured with (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Concurrent expert reads the plans provide buffers for.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub io_threads: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
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

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Port (0: the system picks one). A taken port is an error naming the next free one.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to listen on: loopback (127.0.0.1, ::1, localhost), or one LAN address
    /// together with --api-key. Never 0.0.0.0.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Bearer key every /v1 request must send (Authorization: Bearer KEY).
    #[arg(long, value_name = "KEY", env = "K3_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// A browser origin allowed to call the API (exact, e.g. http://localhost:5173).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Generations that may wait behind the running ones (more get 429 with Retry-After).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub queue: usize,
    /// Requests decoded together, sharing each forward pass (each reply is the one it gets
    /// alone). The memory plan holds a state and KV cache for each; one past what this
    /// machine keeps is refused, naming the bytes (`k3 plan` shows the largest). Default:
    /// --kept-conversations (the sequence states the plan holds anyway).
    #[arg(long, value_name = "N")]
    pub batch: Option<usize>,
    /// Seconds a client has to send a request head (slow clients are closed).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub header_timeout: f64,
    /// Reply length when a chat request names none.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_tokens: usize,
    /// Conversations whose engine state stays in RAM, so an agent's next request (or
    /// another client's) prefills only what is new. The memory plan counts each one: its
    /// KV cache for --context-length positions and its recurrent state.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub kept_conversations: usize,
    /// Conversations pushed out of RAM that are kept on disk in --state-dir (0: none), read
    /// back when a request continues one, also after a restart.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub kept_on_disk: usize,
    /// A request that declares tools and leaves the choice to the model must call one, and
    /// one that answers a tool result is answered in text: to try an agent end to end on a
    /// model that does not call tools on its own, such as the bundled demo model.
    #[arg(long)]
    pub require_tool_call: bool,
    /// Folder of the conversations kept on disk (default: the user's cache folder, k3/serve).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Folder of the Batch API's files and batches (/v1/files, /v1/batches), kept across
    /// restarts: an unfinished batch resumes (default: the user's data folder, k3/batches).
    #[arg(long, value_name = "DIR")]
    pub batch_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct SimCacheArgs {
    /// The trace: headerless little-endian int32 (layer, expert) pairs (`expert_trace.bin`).
    pub trace: PathBuf,
    /// Cache sizes in whole-expert slots, comma-separated (default: the presets' slot counts).
    #[arg(long, value_name = "CSV", default_value = "56,570,740,1700")]
    pub capacity: String,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

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

#[derive(Args, Debug)]
pub struct DownloadArgs {
    /// Hugging Face repository id.
    #[arg(long, default_value = "moonshotai/Kimi-K3")]
    pub repo: String,
    /// Store folder: the files land here at their repository paths (`hf download
    /// --local-dir` layout), with k3's manifest and journals in `.k3-desktop/`.
    #[arg(long, value_name = "STORE")]
    pub to: PathBuf,
    /// Where the packed trunk goes (default: STORE/.k3-desktop/trunk). Put it on the
    /// fastest drive.
    #[arg(long, value_name = "DIR")]
    pub trunk_to: Option<PathBuf>,
    /// Branch, tag or commit, pinned once to a commit (default: K3_REVISION or main).
    #[arg(long)]
    pub revision: Option<String>,
    /// Hub endpoint (default: HF_ENDPOINT or https://huggingface.co).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Files fetched at once.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
    /// Bytes made durable at a time; at most one chunk per file is fetched again after a
    /// crash.
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub chunk_size: String,
    /// First wait after a transient failure, in seconds (doubling to --retry-cap).
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub retry_base: f64,
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub retry_cap: f64,
    /// Seconds without data (or with a trickle) before reconnecting.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub stall_timeout: f64,
    /// Seconds between free-space checks while paused on a full drive.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub space_poll: f64,
    /// Stop after the files verify: no trunk packing, no first load.
    #[arg(long)]
    pub no_pack: bool,
    /// Events as JSON lines on stdout instead of a progress bar.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// A store folder written by `k3 download`.
    #[arg(long, value_name = "STORE")]
    pub model: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}
