//! `k3 run` (raw continuation): the prompt's ids, the generation streamed as ids or text,
//! the `--dump-logits` and `--trace` files; [`report`] prints the outcome.

mod report;

use k3_engine::tokenizer::{StreamDecoder, Tokenizer};
use k3_engine::{CancelToken, DecodeMode, EventSink, GenerateParams, TokenEvent};
use k3_runtime::ReplyFigures;

use super::output_file::{write_bytes_file, write_f32_file};
use super::{check_vocab, input_error, load_engine_with, load_tokenizer, parse_ids, read_text, sampling, Failure};
use crate::args::RunArgs;
use report::RunOutcome;

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
    let text = match (&tokenizer, args.json) {
        (Some(tok), true) => Some(tok.decode(&out.generated)?),
        _ => None,
    };
    let context_length = engine.context_length();
    let outcome = RunOutcome { prompt: &prompt, out: &out, mode: params.mode, figures: &figures, context_length, text };
    report::print(&outcome, args.json);
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
