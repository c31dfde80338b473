//! `k3 run` (raw continuation) and `k3 score` (teacher forcing).

use std::path::{Path, PathBuf};

use k3_engine::tokenizer::{StreamDecoder, Tokenizer};
use k3_engine::{CancelToken, DecodeMode, EventSink, FinishReason, GenerateParams, TokenEvent};
use k3_runtime::ReplyFigures;
use serde_json::json;

use super::{
    check_vocab, input_error, load_engine, load_engine_with, load_tokenizer, parse_ids, read_text, runtime_error,
    sampling, Failure,
};
use crate::args::{RunArgs, ScoreArgs};

/// The prompt ids, and the tokenizer when the prompt was text.
fn prompt(args: &RunArgs) -> Result<(Vec<u32>, Option<Tokenizer>), Failure> {
    let text = match (&args.ids, &args.prompt, &args.prompt_file) {
        (Some(csv), _, _) => return Ok((parse_ids("--ids", csv)?, None)),
        (None, Some(text), _) => text.clone(),
        (None, None, Some(path)) => read_text("--prompt-file", path)?,
        (None, None, None) => return Err(input_error("one of --ids, --prompt or --prompt-file is required".into())),
    };
    let tokenizer = load_tokenizer(&args.model.model)?;
    Ok((tokenizer.encode(&text), Some(tokenizer)))
}

/// Collects logits for `--dump-logits` and echoes tokens (as text when a tokenizer is
/// loaded) in text mode.
struct RunSink<'a> {
    keep_logits: bool,
    logits: Vec<f32>,
    echo: bool,
    text: Option<(&'a Tokenizer, StreamDecoder)>,
}

impl EventSink for RunSink<'_> {
    fn token(&mut self, event: &TokenEvent<'_>) {
        if self.keep_logits {
            self.logits.extend_from_slice(event.logits);
        }
        if !self.echo {
            return;
        }
        match &mut self.text {
            Some((tok, stream)) => out!("{}", stream.push(tok.token_bytes(event.id).unwrap_or_default())),
            None => out!("{}{}", if event.index == 0 { "" } else { "," }, event.id),
        }
    }
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let (prompt, tokenizer) = prompt(&args)?;
    let stop_ids = match &args.stop_ids {
        Some(csv) => parse_ids("--stop-ids", csv)?,
        None => Vec::new(),
    };
    if args.trace.is_some() && super::budget_choice(&args.model.memory)?.is_none() {
        // Resident experts are never requested from a cache: the trace would be empty.
        return Err(input_error(
            "--trace records the expert cache's requests: give a budget (--preset or --cache-budget)".into(),
        ));
    }
    let engine = load_engine_with(&args.model, args.trace.is_some())?;
    if let Some(tok) = &tokenizer {
        check_vocab(tok, &engine, &args.model.model)?;
    }
    let params = GenerateParams {
        max_new_tokens: args.gen,
        sampling: sampling(&args.sampling),
        stop_ids,
        mode: decode_mode(&args),
    };
    let mut sink = RunSink {
        keep_logits: args.dump_logits.is_some(),
        logits: Vec::new(),
        echo: !args.json,
        text: tokenizer.as_ref().map(|t| (t, StreamDecoder::new())),
    };
    let mut session = engine.new_session();
    let out = engine.generate(&mut session, &prompt, &params, &CancelToken::new(), &mut sink)?;
    if let Some((_, stream)) = &mut sink.text {
        out!("{}", stream.finish());
    }
    if let Some(path) = &args.dump_logits {
        write_f32_file(path, &sink.logits)?;
    }
    if let Some(path) = &args.trace {
        let pairs: Vec<u8> = engine
            .take_expert_trace()
            .into_iter()
            .flat_map(|(l, e)| [l.to_le_bytes(), e.to_le_bytes()])
            .flatten()
            .collect();
        write_bytes_file(path, &pairs)?;
    }
    let figures = ReplyFigures::of(&out, (session.tokens().len(), engine.context_length()), engine.plan().is_some());
    if args.json {
        let mut obj = json!({
            "prompt_ids": prompt,
            "generated_ids": out.generated,
            "finish_reason": finish_reason(out.finish),
            "mode": match params.mode {
                DecodeMode::FullRecompute => "full_recompute",
                DecodeMode::Incremental => "incremental",
                DecodeMode::Speculative { .. } => "speculative",
            },
            "speculation": {
                "verify_passes": out.speculation.verify_passes,
                "drafted": out.speculation.drafted,
                "accepted": out.speculation.accepted,
            },
            "prefill_seconds": out.prefill_time.as_secs_f64(),
            "total_seconds": out.total_time.as_secs_f64(),
            "seconds_per_token": figures.seconds_per_token,
            "context_length": engine.context_length(),
            "metrics": metrics_json(&out, &figures),
        });
        if let Some(tok) = &tokenizer {
            obj["text"] = json!(tok.decode(&out.generated)?);
        }
        outln!("{obj}");
    } else {
        outln!();
        eprintln!(
            "{} tokens, {}, {:.3} s total, {:.3} s to the first token, {}{}",
            out.generated.len(),
            finish_reason(out.finish),
            out.total_time.as_secs_f64(),
            figures.time_to_first_token.as_secs_f64(),
            figures.seconds_per_token.map_or("– s/token".to_string(), |s| format!("{s:.3} s/token")),
            speculation_summary(&out.speculation)
        );
    }
    Ok(())
}

/// The decode mode `run`'s flags ask for.
fn decode_mode(args: &RunArgs) -> DecodeMode {
    match (args.full_recompute, args.speculate) {
        (true, _) => DecodeMode::FullRecompute,
        (false, 0) => DecodeMode::Incremental,
        (false, n) => DecodeMode::Speculative { max_draft: usize::from(n) },
    }
}

/// ", 12 of 20 draft tokens accepted in 6 verify passes" (empty when nothing was drafted).
pub(super) fn speculation_summary(s: &k3_engine::speculate::SpeculationStats) -> String {
    if s.verify_passes == 0 {
        return String::new();
    }
    format!(", {} of {} draft tokens accepted in {} verify passes", s.accepted, s.drafted, s.verify_passes)
}

pub fn score(args: ScoreArgs) -> Result<(), Failure> {
    let ids = parse_ids("--ids", &args.ids)?;
    if ids.is_empty() {
        return Err(input_error("--ids: at least one token id is required".into()));
    }
    let engine = load_engine(&args.model)?;
    let vocab = engine.config().vocab_size;
    let mut argmax: Vec<u32> = Vec::with_capacity(ids.len());
    // Logits go to the dump chunk by chunk: a long context never holds them all.
    let mut dump = args.dump_logits.as_deref().map(OutputFile::create).transpose()?;
    let done = engine.score_chunked(&ids, &CancelToken::new(), &mut |_, logits| {
        argmax.extend(logits.chunks(vocab).map(k3_engine::sampling::argmax));
        if let Some(out) = dump.as_mut() {
            out.write_f32(logits).map_err(|e| k3_engine::Error::io(out.path(), e))?;
        }
        Ok(())
    })?;
    if !done {
        return Err(runtime_error("scoring was cancelled".into()));
    }
    if let Some(out) = dump {
        out.finish()?;
    }
    if args.json {
        outln!("{}", json!({ "ids": ids, "argmax": argmax, "vocab_size": vocab }));
    } else {
        outln!("{}", argmax.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
    }
    Ok(())
}

/// The JSON name of a finish reason.
fn finish_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "cancelled",
        FinishReason::ContextFull => "context_full",
    }
}

/// The run's streaming metrics as JSON.
fn metrics_json(out: &k3_engine::Generation, figures: &ReplyFigures) -> serde_json::Value {
    let m = &out.metrics;
    let wait = m.io_wait().as_secs_f64();
    json!({
        "expert_requests": m.expert_requests,
        "expert_true_resident_hits": m.expert_true_hits,
        "expert_prefetch_hits": m.expert_prefetch_hits,
        "expert_misses": m.expert_misses,
        "true_resident_hit_rate": figures.true_hit_rate.unwrap_or(0.0),
        "expert_bytes_read": m.expert_bytes_read,
        "trunk_bytes_read": m.trunk_bytes_read,
        "vocab_bytes_read": m.vocab_bytes_read,
        "io_wait_seconds": wait,
        "compute_seconds": figures.compute().as_secs_f64(),
        "peak_rss_bytes": out.peak_rss_bytes,
    })
}

/// Writes little-endian f32 values to `path` via a temporary file and a rename, so a
/// failure never leaves a half-written dump under the requested name.
fn write_f32_file(path: &Path, values: &[f32]) -> Result<(), Failure> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_bytes_file(path, &bytes)
}

/// Writes `bytes` to `path` (see [`OutputFile`]).
fn write_bytes_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut out = OutputFile::create(path)?;
    out.write(bytes).map_err(|e| runtime_error(format!("writing {}: {e}", path.display())))?;
    out.finish()
}

/// A file being written: a regular file (or a new one) goes to a temporary name and is
/// renamed when finished, so a failure never leaves half a file under the name; anything
/// else (a device such as `/dev/null`, a FIFO, a symlink) is written in place and never
/// replaced.
struct OutputFile {
    path: PathBuf,
    /// The temporary name to rename from, for regular files.
    partial: Option<PathBuf>,
    writer: std::io::BufWriter<std::fs::File>,
}

impl OutputFile {
    fn create(path: &Path) -> Result<OutputFile, Failure> {
        let fail = |e: std::io::Error| runtime_error(format!("writing {}: {e}", path.display()));
        let in_place = match std::fs::symlink_metadata(path) {
            Ok(meta) => !meta.file_type().is_file(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(fail(e)),
        };
        let partial = (!in_place).then(|| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            path.with_file_name(format!(".{name}.partial"))
        });
        let target = partial.as_deref().unwrap_or(path);
        let file = std::fs::File::create(target).map_err(fail)?;
        Ok(OutputFile { path: path.to_path_buf(), partial, writer: std::io::BufWriter::new(file) })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        self.writer.write_all(bytes)
    }

    /// Little-endian f32 values.
    fn write_f32(&mut self, values: &[f32]) -> std::io::Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(&bytes)
    }

    fn finish(self) -> Result<(), Failure> {
        let fail = |e: std::io::Error| runtime_error(format!("writing {}: {e}", self.path.display()));
        self.writer.into_inner().map_err(|e| fail(e.into_error()))?;
        match &self.partial {
            Some(partial) => std::fs::rename(partial, &self.path).map_err(fail),
            None => Ok(()),
        }
    }
}
