//! One function per subcommand: parse inputs, make one library call, print the result.

mod bench;
mod bench_agent;
mod bench_batch;
mod bench_batch_threads;
mod bench_codec;
mod bench_constrain;
mod bench_context;
mod bench_speculate;
mod bench_stream;
mod chat;
mod cost_rates;
mod disk;
mod doctor;
mod download;
mod forecast;
mod forecast_inputs;
mod forecast_out;
mod pack;
mod plan;
mod run;
mod serve;
mod sim_cache;
mod synth;
mod text;
mod verify;

use std::path::Path;

use k3_engine::tokenizer::Tokenizer;
use k3_engine::{Engine, EngineOptions, MemoryOptions, Sampling};
use k3_plan::BudgetChoice;
use k3_runtime::RuntimeError;

use crate::args::{Cli, Command, MemoryArgs, ModelArgs, SamplingArgs};

/// A failure with its exit status.
pub struct Failure {
    pub exit_code: u8,
    pub message: String,
}

impl From<k3_engine::Error> for Failure {
    fn from(e: k3_engine::Error) -> Self {
        Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: e.to_string() }
    }
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Self {
        Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: e.to_string() }
    }
}

impl From<k3_store::DiskBenchError> for Failure {
    fn from(e: k3_store::DiskBenchError) -> Self {
        Failure { exit_code: if e.is_input_error() { 2 } else { 1 }, message: format!("bench disk: {e}") }
    }
}

pub fn input_error(message: String) -> Failure {
    Failure { exit_code: 2, message }
}

pub fn runtime_error(message: String) -> Failure {
    Failure { exit_code: 1, message }
}

pub fn dispatch(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Score(args) => run::score(args),
        Command::Tokenize(args) => text::tokenize(args),
        Command::Detokenize(args) => text::detokenize(args),
        Command::Chat(args) => chat::chat(args),
        Command::Serve(args) => serve::serve(args),
        Command::Plan(args) => plan::plan(args),
        Command::Forecast(args) => forecast::forecast(args),
        Command::Pack(args) => pack::pack(args),
        Command::Bench(crate::args::BenchCommand::Kernels(args)) => bench::kernels(args),
        Command::Bench(crate::args::BenchCommand::Stream(args)) => bench_stream::stream(args),
        Command::Bench(crate::args::BenchCommand::Disk(args)) => disk::disk(args),
        Command::Bench(crate::args::BenchCommand::Speculate(args)) => bench_speculate::speculate(args),
        Command::Bench(crate::args::BenchCommand::Codec(args)) => bench_codec::codec(args),
        Command::Bench(crate::args::BenchCommand::Context(args)) => bench_context::context(args),
        Command::Bench(crate::args::BenchCommand::Constrain(args)) => bench_constrain::constrain(args),
        Command::Bench(crate::args::BenchCommand::Agent(args)) => bench_agent::agent(args),
        Command::Bench(crate::args::BenchCommand::Batch(args)) => bench_batch::batch(args),
        Command::SimCache(args) => sim_cache::sim_cache(args),
        Command::Synth(args) => synth::synth(args),
        Command::Download(args) => download::download(args),
        Command::Verify(args) => verify::verify(args),
        Command::Doctor(args) => doctor::doctor(args),
    }
}

pub(super) fn require_dir(flag: &str, dir: &Path) -> Result<(), Failure> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(input_error(format!("{flag} {}: not a folder", dir.display())))
    }
}

/// The engine options the model flags ask for.
pub(super) fn engine_options(args: &ModelArgs) -> Result<EngineOptions, Failure> {
    require_dir("--model", &args.model)?;
    Ok(EngineOptions { model_dir: args.model.clone(), threads: args.threads, memory: memory_options(&args.memory)? })
}

pub(super) fn load_engine(args: &ModelArgs) -> Result<Engine, Failure> {
    load_engine_with(args, false)
}

pub(super) fn load_engine_with(args: &ModelArgs, record_trace: bool) -> Result<Engine, Failure> {
    let mut options = engine_options(args)?;
    options.memory.record_trace = record_trace;
    Ok(k3_runtime::model::open_engine(&options)?)
}

/// The budget the memory flags ask for (`None`: every weight resident).
pub(super) fn budget_choice(args: &MemoryArgs) -> Result<Option<BudgetChoice>, Failure> {
    let flag = if args.preset.is_some() { "--preset" } else { "--trunk-budget/--cache-budget" };
    BudgetChoice::from_flags(args.preset.as_deref(), args.trunk_budget.as_deref(), args.cache_budget.as_deref())
        .map_err(|e| input_error(format!("{flag}: {e}")))
}

/// What one budget given alone leaves unlimited, said (probe finding: it was silent).
fn one_budget_note(args: &MemoryArgs) -> Option<&'static str> {
    match (&args.preset, &args.trunk_budget, &args.cache_budget) {
        (None, Some(_), None) => Some("no --cache-budget: the expert cache may hold every routed expert"),
        (None, None, Some(_)) => Some("no --trunk-budget: every trunk layer stays in RAM"),
        _ => None,
    }
}

/// Memory flags → engine memory options (resident when no budget flag is given).
pub(super) fn memory_options(args: &MemoryArgs) -> Result<MemoryOptions, Failure> {
    let mut opts = MemoryOptions::resident();
    opts.io_threads = args.io_threads;
    opts.context_length = args.context_length.unwrap_or(k3_engine::DEFAULT_CONTEXT_LENGTH);
    opts.fit_context = args.context_length.is_none();
    if let Some(dir) = &args.trunk {
        require_dir("--trunk", dir)?;
        opts.trunk_dir = Some(dir.clone());
    }
    if let Some(note) = one_budget_note(args) {
        eprintln!("note: {note}");
    }
    opts.cache_policy = k3_engine::stream::CachePolicy::parse(&args.cache_policy)
        .ok_or_else(|| input_error(format!("--cache-policy {}: use lru or layer-ahead", args.cache_policy)))?;
    opts.budget = budget_choice(args)?;
    opts.read_pattern = disk::read_pattern(args)?;
    opts.residency = cost_rates::residency_rule(args, opts.read_pattern)?;
    Ok(opts)
}

pub(super) fn load_tokenizer(dir: &Path) -> Result<Tokenizer, Failure> {
    require_dir("--model", dir)?;
    Ok(k3_runtime::model::open_tokenizer(dir)?)
}

/// Refuses a tokenizer whose ids the model cannot embed.
fn check_vocab(tokenizer: &Tokenizer, engine: &Engine, dir: &Path) -> Result<(), Failure> {
    Ok(k3_runtime::model::check_vocab(tokenizer, engine, dir)?)
}

/// Parses `1,2,3` for flag `flag`.
fn parse_ids(flag: &str, csv: &str) -> Result<Vec<u32>, Failure> {
    csv.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().map_err(|_| input_error(format!("{flag}: `{s}` is not a token id"))))
        .collect()
}

fn sampling(args: &SamplingArgs) -> Sampling {
    match args.temperature {
        Some(temperature) => Sampling::from_user(temperature, args.top_p.unwrap_or(1.0), args.seed.unwrap_or(0)),
        None => Sampling::Greedy,
    }
}

/// The largest text file a flag reads (a full K3 context is well under 1 MB of text).
const MAX_TEXT_FILE_BYTES: u64 = 64 << 20;

/// The bytes of the regular file `path` for flag `flag`, refusing anything else (a device,
/// a FIFO, a folder: never opened, so a FIFO cannot hang) and a file larger than `max`
/// bytes before reading it all (probe finding: `--config /dev/zero` read 19.7 GB).
fn read_regular(flag: &str, path: &Path, max: u64) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let fail = |e: std::io::Error| input_error(format!("{flag} {}: {e}", path.display()));
    if !std::fs::metadata(path).map_err(fail)?.is_file() {
        return Err(input_error(format!("{flag} {}: not a regular file", path.display())));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(fail)?.take(max + 1).read_to_end(&mut bytes).map_err(fail)?;
    if bytes.len() as u64 > max {
        return Err(input_error(format!("{flag} {}: larger than {} MiB", path.display(), max >> 20)));
    }
    Ok(bytes)
}

/// Reads a UTF-8 text file for flag `flag` (a regular file of at most 64 MiB).
fn read_text(flag: &str, path: &Path) -> Result<String, Failure> {
    let bytes = read_regular(flag, path, MAX_TEXT_FILE_BYTES)?;
    String::from_utf8(bytes).map_err(|e| input_error(format!("{flag} {}: not UTF-8 ({e})", path.display())))
}
