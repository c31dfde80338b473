//! The flags that load a model, turned into what the engine takes: engine and memory
//! options (budgets, trunk, cache policy, read pattern, residency rule), the engine and
//! tokenizer themselves, and the sampling the flags ask for.

use std::path::Path;

use k3_engine::tokenizer::Tokenizer;
use k3_engine::{Engine, EngineOptions, MemoryOptions, Sampling};
use k3_plan::BudgetChoice;

use super::{cost_rates, disk, input_error, require_dir, Failure};
use crate::args::{MemoryArgs, ModelArgs, SamplingArgs};

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
    opts.cache_policy = k3_engine::CachePolicy::parse(&args.cache_policy)
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
pub(super) fn check_vocab(tokenizer: &Tokenizer, engine: &Engine, dir: &Path) -> Result<(), Failure> {
    Ok(k3_runtime::model::check_vocab(tokenizer, engine, dir)?)
}

pub(super) fn sampling(args: &SamplingArgs) -> Sampling {
    match args.temperature {
        Some(temperature) => Sampling::from_user(temperature, args.top_p.unwrap_or(1.0), args.seed.unwrap_or(0)),
        None => Sampling::Greedy,
    }
}
