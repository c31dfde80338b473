//! `k3 bench context`: decode time per token at several context lengths, in one run.
//!
//! Owns: the contexts to measure, a session per context (a 16-token prompt prefilled for
//! real, then its positions repeated up to the context: `Engine::session_repeated_to`,
//! because prefilling 32 K positions of a real-size model for real takes hours at today's
//! prefill speed), the rounds (the contexts' order alternating, so no context always runs
//! on the warmer cache), and each round's seconds per token; k3-bench's [`ContextReport`]
//! takes each context's median and its ratio to the first one's (`--json` is derived from it).
//! Must not: time the prompt's prefill or the repeat as decoding; report a context the
//! engine could not hold (a context past `--context-length` is an error, never a figure).

use k3_bench::context::{ContextReport, ContextRounds};
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, NullSink, Sampling};

use super::{input_error, load_engine, Failure};
use crate::args::BenchContextArgs;
use crate::out::Json;

/// Tokens of the prompt prefilled for real, whose positions are then repeated.
const PROMPT_TOKENS: usize = 16;

/// Seconds per decoded token of one run at `context` positions.
fn decode_seconds_per_token(engine: &Engine, context: usize, tokens: usize) -> Result<f64, Failure> {
    let vocab = engine.config().vocab_size as u32;
    let prompt: Vec<u32> = (0..PROMPT_TOKENS as u32).map(|i| (7 + i * 13) % vocab).collect();
    let prefill = GenerateParams {
        max_new_tokens: 1,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let cancel = CancelToken::new();
    let mut session = engine.new_session();
    engine.generate(&mut session, &prompt, &prefill, &cancel, &mut NullSink)?;
    let mut session = engine.session_repeated_to(session, context - 1)?;
    let decode = GenerateParams { max_new_tokens: tokens, ..prefill };
    let out = engine.generate(&mut session, &[prompt[0]], &decode, &cancel, &mut NullSink)?;
    let steps = out.generated.len().saturating_sub(1).max(1);
    Ok((out.total_time - out.prefill_time).as_secs_f64() / steps as f64)
}

pub fn context(mut args: BenchContextArgs) -> Result<(), Failure> {
    // A measurement reserves what it is told, not what this machine's free memory allows.
    let context_length = *args.model.memory.context_length.get_or_insert(k3_engine::DEFAULT_CONTEXT_LENGTH);
    if args.tokens < 2 || args.rounds == 0 || args.contexts.is_empty() {
        return Err(input_error("--tokens must be at least 2, --rounds at least 1, and --contexts non-empty".into()));
    }
    let longest = args.contexts.iter().copied().max().unwrap_or(0);
    if args.contexts.iter().any(|&c| c <= PROMPT_TOKENS) || longest + args.tokens > context_length {
        return Err(input_error(format!(
            "every context must exceed {PROMPT_TOKENS}, and the longest plus --tokens ({}) fit --context-length {}",
            longest + args.tokens,
            context_length
        )));
    }
    let engine = load_engine(&args.model)?;
    let mut per_round: Vec<Vec<f64>> = vec![Vec::new(); args.contexts.len()];
    for round in 0..args.rounds {
        let mut order: Vec<usize> = (0..args.contexts.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            per_round[i].push(decode_seconds_per_token(&engine, args.contexts[i], args.tokens)?);
        }
    }
    let measured = args
        .contexts
        .iter()
        .zip(per_round)
        .map(|(&c, seconds_per_token)| ContextRounds {
            context: c,
            kv_bytes: engine.footprint().kv_bytes(c as u64),
            seconds_per_token,
        })
        .collect();
    let report = ContextReport::of(args.tokens, args.rounds, measured);
    if args.json {
        outln!("{}", Json(&report));
        return Ok(());
    }
    for f in &report.contexts {
        // The context unpadded: `{:>7}` never padded the JSON number it used to print.
        outln!(
            "context {}: {:.3} s/token (median of {:?}) · {:.2}× the first · KV {:.1} MB",
            f.context,
            f.seconds_per_token_median,
            f.seconds_per_token_rounds.len(),
            f.ratio_to_first,
            f.kv_bytes as f64 / 1e6
        );
    }
    Ok(())
}
