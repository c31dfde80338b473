//! `k3 bench batch`: several conversations decoded in one pass against one conversation, in
//! one run: aggregate tokens per second, each conversation's seconds per token and the
//! bytes read per token at each batch size, and every conversation's tokens checked equal
//! at every size that holds it. `--concurrent` takes the server's path instead
//! (`bench_batch_threads`: a thread per conversation through the engine's step gate).
//! [`report`] prints the rows, or `--json` derived from typed results.

mod report;

use std::time::Instant;

use k3_bench::batch::SizeFigures;
use k3_engine::sampling::Sampler;
use k3_engine::{CancelToken, Engine, Sampling, Session};

use super::{input_error, load_engine, runtime_error, Failure};
use crate::args::BenchBatchArgs;

pub fn batch(args: BenchBatchArgs) -> Result<(), Failure> {
    if args.sizes.is_empty() || args.sizes.contains(&0) || args.tokens == 0 || args.prompt_tokens == 0 {
        return Err(input_error("--sizes must be positive numbers; --tokens and --prompt-tokens at least 1".into()));
    }
    if args.concurrent && args.tokens < 2 {
        return Err(input_error("--concurrent times the tokens after the first: give --tokens 2 or more".into()));
    }
    let mut runs: Vec<SizeFigures> = Vec::new();
    for &size in &args.sizes {
        // A fresh engine per size: no size starts with another's warm expert cache.
        let engine = load_engine(&args.model)?;
        let run = if args.concurrent {
            super::bench_batch_threads::measure_concurrent(&engine, size, &args)?
        } else {
            measure(&engine, size, &args)?
        };
        drop(engine);
        check_same_tokens(&runs, &run)?;
        if !args.json {
            report::print_row(&run, runs.first().unwrap_or(&run));
        }
        runs.push(run);
    }
    if args.json {
        report::print_json(&runs);
    }
    Ok(())
}

/// `size` conversations: their prompts prefilled together, then `args.tokens` decode steps
/// with every conversation advancing one greedy token per step.
fn measure(engine: &Engine, size: usize, args: &BenchBatchArgs) -> Result<SizeFigures, Failure> {
    let vocab = engine.config().vocab_size as u32;
    let cancel = CancelToken::new();
    let mut sessions: Vec<Session> = Vec::with_capacity(size);
    for i in 0..size as u32 {
        let prompt: Vec<u32> = (0..args.prompt_tokens as u32).map(|t| (t * 31 + i * 97 + 5) % vocab).collect();
        let mut s = engine.new_session();
        engine.extend_session(&mut s, &prompt).map_err(|e| runtime_error(e.to_string()))?;
        sessions.push(s);
    }
    let mut samplers: Vec<Sampler> = (0..size)
        .map(|_| Sampler::new(Sampling::Greedy))
        .collect::<Result<_, _>>()
        .map_err(|e| runtime_error(e.to_string()))?;
    let mut tokens = vec![Vec::new(); size];
    let started = Instant::now();
    let mut prefill = None;
    let mut steps = Vec::new();
    let mut bytes = 0u64;
    while tokens[0].len() < args.tokens {
        let before = engine.metrics();
        let step_start = Instant::now();
        let mut refs: Vec<&mut Session> = sessions.iter_mut().collect();
        let out = engine
            .step_batch(&mut refs, engine.prefill_chunk(), &cancel)
            .map_err(|e| runtime_error(e.to_string()))?
            .ok_or_else(|| runtime_error("cancelled".into()))?;
        let caught_up = out.iter().all(Option::is_some);
        for ((logits, s), (sampler, ids)) in
            out.into_iter().zip(&mut sessions).zip(samplers.iter_mut().zip(&mut tokens))
        {
            if let Some(logits) = logits {
                let id = sampler.pick(&logits);
                ids.push(id);
                s.push(id);
            }
        }
        match prefill {
            // The pass that fed the last prompt tokens gave every first token.
            None if caught_up => prefill = Some(started.elapsed()),
            None => {}
            Some(_) => {
                steps.push(step_start.elapsed().as_secs_f64());
                let read = engine.metrics().since(&before);
                bytes += read.expert_bytes_read + read.trunk_bytes_read;
            }
        }
    }
    Ok(SizeFigures::from_steps(size, prefill.unwrap_or_default(), &steps, bytes, tokens))
}

/// Conversation `i` gets the same tokens at every size that holds it.
fn check_same_tokens(earlier: &[SizeFigures], run: &SizeFigures) -> Result<(), Failure> {
    for e in earlier {
        for (i, (a, b)) in e.tokens.iter().zip(&run.tokens).enumerate() {
            if a != b {
                return Err(runtime_error(format!(
                    "conversation {i}: {a:?} in a batch of {} but {b:?} in a batch of {}",
                    e.size, run.size
                )));
            }
        }
    }
    Ok(())
}
