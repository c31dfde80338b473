//! `k3 bench speculate`: exact speculative decoding against serial decoding, in one run.
//!
//! Owns: the two prompts (a list that repeats, and ids from a seeded generator that do not),
//! alternating serial and speculative runs on one loaded engine, the check that both runs
//! generated the same ids (a difference is an error, never a figure), and the figures:
//! decode tokens per second of each, their ratio, and the drafts' acceptance.
//! Must not: time the prompt's prefill (the same pass in both modes) as decoding.

use k3_engine::speculate::SpeculationStats;
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, NullSink, Sampling};
use serde_json::json;

use super::{load_engine, runtime_error, Failure};
use crate::args::BenchSpeculateArgs;

/// One generation's decode figures.
struct Run {
    generated: Vec<u32>,
    decode_seconds: f64,
    speculation: SpeculationStats,
}

/// A prompt of `vocab` ids: `n` tokens of a 6-id list repeated, or of a seeded generator.
fn prompt(repetitive: bool, vocab: u32, n: usize) -> Vec<u32> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            if repetitive {
                (3 + (i % 6) as u32 * 7) % vocab
            } else {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((x >> 33) % u64::from(vocab)) as u32
            }
        })
        .collect()
}

fn run(engine: &Engine, prompt: &[u32], tokens: usize, mode: DecodeMode) -> Result<Run, Failure> {
    let params = GenerateParams { max_new_tokens: tokens, sampling: Sampling::Greedy, stop_ids: vec![], mode };
    let out = engine.generate(&mut engine.new_session(), prompt, &params, &CancelToken::new(), &mut NullSink)?;
    let decode_seconds = (out.total_time - out.prefill_time).as_secs_f64();
    Ok(Run { generated: out.generated, decode_seconds, speculation: out.speculation })
}

/// Sums of one prompt's runs in each mode.
#[derive(Default)]
struct Totals {
    serial_seconds: f64,
    speculative_seconds: f64,
    decoded: usize,
    stats: SpeculationStats,
}

pub fn speculate(args: BenchSpeculateArgs) -> Result<(), Failure> {
    if args.tokens < 2 || args.rounds == 0 {
        return Err(super::input_error("--tokens must be at least 2 and --rounds at least 1".into()));
    }
    let engine = load_engine(&args.model)?;
    let vocab = engine.config().vocab_size as u32;
    let speculative = DecodeMode::Speculative { max_draft: usize::from(args.speculate) };
    let mut results = Vec::new();
    for (name, repetitive) in [("repetitive", true), ("non_repetitive", false)] {
        let ids = prompt(repetitive, vocab, 48);
        let mut t = Totals::default();
        for round in 0..args.rounds {
            // Alternate which mode runs first (the cache is warmer for the second).
            let (serial, fast) = if round % 2 == 0 {
                let serial = run(&engine, &ids, args.tokens, DecodeMode::Incremental)?;
                (serial, run(&engine, &ids, args.tokens, speculative)?)
            } else {
                let fast = run(&engine, &ids, args.tokens, speculative)?;
                (run(&engine, &ids, args.tokens, DecodeMode::Incremental)?, fast)
            };
            if serial.generated != fast.generated {
                return Err(runtime_error(format!(
                    "{name} prompt, round {round}: speculative decoding generated {:?}, serial {:?}",
                    fast.generated, serial.generated
                )));
            }
            t.serial_seconds += serial.decode_seconds;
            t.speculative_seconds += fast.decode_seconds;
            t.decoded += serial.generated.len().saturating_sub(1);
            t.stats.verify_passes += fast.speculation.verify_passes;
            t.stats.drafted += fast.speculation.drafted;
            t.stats.accepted += fast.speculation.accepted;
        }
        results.push((name, t));
    }
    report(&args, &results);
    Ok(())
}

fn report(args: &BenchSpeculateArgs, results: &[(&str, Totals)]) {
    let figures: Vec<_> = results
        .iter()
        .map(|(name, t)| {
            let rate = |s: f64| if s > 0.0 { t.decoded as f64 / s } else { 0.0 };
            let (serial, fast) = (rate(t.serial_seconds), rate(t.speculative_seconds));
            let acceptance = if t.stats.drafted > 0 { t.stats.accepted as f64 / t.stats.drafted as f64 } else { 0.0 };
            json!({
                "prompt": name,
                "decoded_tokens": t.decoded,
                "serial_tokens_per_second": serial,
                "speculative_tokens_per_second": fast,
                "speedup": if serial > 0.0 { fast / serial } else { 0.0 },
                "verify_passes": t.stats.verify_passes,
                "drafted": t.stats.drafted,
                "accepted": t.stats.accepted,
                "acceptance": acceptance,
                "tokens_identical": true,
            })
        })
        .collect();
    if args.json {
        outln!("{}", json!({ "max_draft": args.speculate, "rounds": args.rounds, "prompts": figures }));
        return;
    }
    for f in &figures {
        outln!(
            "{}: {:.3} tok/s serial, {:.3} tok/s speculative ({:.2}×) · {} of {} draft tokens accepted ({:.0} %) in {} verify passes · tokens identical",
            f["prompt"].as_str().unwrap_or(""),
            f["serial_tokens_per_second"].as_f64().unwrap_or(0.0),
            f["speculative_tokens_per_second"].as_f64().unwrap_or(0.0),
            f["speedup"].as_f64().unwrap_or(0.0),
            f["accepted"],
            f["drafted"],
            100.0 * f["acceptance"].as_f64().unwrap_or(0.0),
            f["verify_passes"]
        );
    }
}
