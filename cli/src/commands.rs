//! One function per subcommand: parse inputs, make one engine call, print the result.

use std::io::Write;
use std::path::Path;

use k3_engine::{CancelToken, DecodeMode, Engine, EngineOptions, EventSink, GenerateParams, Sampling, TokenEvent};
use serde_json::json;

use crate::args::{Cli, Command, ModelArgs, RunArgs, ScoreArgs};

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

fn input_error(message: String) -> Failure {
    Failure { exit_code: 2, message }
}

fn runtime_error(message: String) -> Failure {
    Failure { exit_code: 1, message }
}

pub fn dispatch(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => run(args),
        Command::Score(args) => score(args),
    }
}

fn load(args: &ModelArgs) -> Result<Engine, Failure> {
    if !args.model.is_dir() {
        return Err(input_error(format!("--model {}: not a folder", args.model.display())));
    }
    Ok(Engine::load(&EngineOptions { model_dir: args.model.clone(), threads: args.threads })?)
}

/// Parses `1,2,3` for flag `flag`.
fn parse_ids(flag: &str, csv: &str) -> Result<Vec<u32>, Failure> {
    csv.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().map_err(|_| input_error(format!("{flag}: `{s}` is not a token id"))))
        .collect()
}

fn prompt_ids(args: &RunArgs) -> Result<Vec<u32>, Failure> {
    match (&args.ids, &args.prompt, &args.prompt_file) {
        (Some(csv), _, _) => parse_ids("--ids", csv),
        (None, Some(_), _) | (None, None, Some(_)) => Err(input_error(
            "--prompt/--prompt-file needs a tokenizer, which this build does not have yet; pass --ids".into(),
        )),
        (None, None, None) => Err(input_error("one of --ids, --prompt or --prompt-file is required".into())),
    }
}

fn sampling(args: &RunArgs) -> Sampling {
    match args.temperature {
        Some(temperature) => {
            Sampling::TopP { temperature, top_p: args.top_p.unwrap_or(1.0), seed: args.seed.unwrap_or(0) }
        }
        None => Sampling::Greedy,
    }
}

/// Collects generated logits for `--dump-logits` and echoes tokens in text mode.
struct CliSink {
    keep_logits: bool,
    logits: Vec<f32>,
    echo: bool,
}

impl EventSink for CliSink {
    fn token(&mut self, event: &TokenEvent<'_>) {
        if self.keep_logits {
            self.logits.extend_from_slice(event.logits);
        }
        if self.echo {
            print!("{}{}", if event.index == 0 { "" } else { "," }, event.id);
            let _ = std::io::stdout().flush();
        }
    }
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let prompt = prompt_ids(&args)?;
    let stop_ids = match &args.stop_ids {
        Some(csv) => parse_ids("--stop-ids", csv)?,
        None => Vec::new(),
    };
    let engine = load(&args.model)?;
    let params = GenerateParams {
        max_new_tokens: args.gen,
        sampling: sampling(&args),
        stop_ids,
        mode: if args.full_recompute { DecodeMode::FullRecompute } else { DecodeMode::Incremental },
    };
    let mut sink = CliSink { keep_logits: args.dump_logits.is_some(), logits: Vec::new(), echo: !args.json };
    let mut session = engine.new_session();
    let out = engine.generate(&mut session, &prompt, &params, &CancelToken::new(), &mut sink)?;
    if let Some(path) = &args.dump_logits {
        write_f32_file(path, &sink.logits)?;
    }
    let n_gen = out.generated.len().max(1) as f64;
    if args.json {
        let obj = json!({
            "prompt_ids": prompt,
            "generated_ids": out.generated,
            "finish_reason": format!("{:?}", out.finish).to_lowercase(),
            "mode": if args.full_recompute { "full_recompute" } else { "incremental" },
            "prefill_seconds": out.prefill_time.as_secs_f64(),
            "total_seconds": out.total_time.as_secs_f64(),
            "seconds_per_token": out.total_time.as_secs_f64() / n_gen,
        });
        println!("{obj}");
    } else {
        println!();
        eprintln!(
            "{} tokens, {:?}, {:.3} s total, {:.3} s/token",
            out.generated.len(),
            out.finish,
            out.total_time.as_secs_f64(),
            out.total_time.as_secs_f64() / n_gen
        );
    }
    Ok(())
}

fn score(args: ScoreArgs) -> Result<(), Failure> {
    let ids = parse_ids("--ids", &args.ids)?;
    if ids.is_empty() {
        return Err(input_error("--ids: at least one token id is required".into()));
    }
    let engine = load(&args.model)?;
    let vocab = engine.config().vocab_size;
    let logits =
        engine.score(&ids, &CancelToken::new(), None)?.ok_or_else(|| runtime_error("scoring was cancelled".into()))?;
    let argmax: Vec<u32> = logits.chunks(vocab).map(k3_engine::sampling::argmax).collect();
    if let Some(path) = &args.dump_logits {
        write_f32_file(path, &logits)?;
    }
    if args.json {
        println!("{}", json!({ "ids": ids, "argmax": argmax, "vocab_size": vocab }));
    } else {
        let text: Vec<String> = argmax.iter().map(u32::to_string).collect();
        println!("{}", text.join(","));
    }
    Ok(())
}

/// Writes little-endian f32 values to `path` via a temporary file and a rename, so a
/// failure never leaves a half-written dump under the requested name.
fn write_f32_file(path: &Path, values: &[f32]) -> Result<(), Failure> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.partial"));
    let fail = |e: std::io::Error| runtime_error(format!("writing {}: {e}", path.display()));
    std::fs::write(&tmp, &bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}
