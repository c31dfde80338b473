//! `k3 bench speculate`: exact speculative decoding against serial decoding, in one run.
//!
//! Owns: the two prompts (a list that repeats, and ids from a seeded generator that do not),
//! the four cases (prompt lookup on each prompt, as the product drafts; and drafts replayed
//! from serial decoding's own output, every one right — what a model that copies its
//! context drafts on a repetitive prompt, which random synthetic weights never do — or
//! every one wrong, the most a failed draft can cost), alternating serial and speculative
//! runs on one loaded engine, the check that both runs generated the same ids (a
//! difference is an error, never a figure), and the figures: decode tokens per second of
//! each, their ratio, and the drafts' acceptance.
//! [`cases`] runs the cases, [`report`] prints them (`--json` derived from typed results).
//! Must not: time the prompt's prefill (the same pass in both modes) as decoding; let a
//! replayed draft change an output (the engine verifies it like any other).

mod cases;
mod drafts;
mod report;

use super::{load_engine, Failure};
use crate::args::BenchSpeculateArgs;
use cases::run_case;
use drafts::Drafts;

/// Prompt length, in tokens.
const PROMPT_TOKENS: usize = 48;

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

pub fn speculate(args: BenchSpeculateArgs) -> Result<(), Failure> {
    if args.tokens < 2 || args.rounds == 0 {
        return Err(super::input_error("--tokens must be at least 2 and --rounds at least 1".into()));
    }
    let engine = load_engine(&args.model)?;
    let vocab = engine.config().vocab_size as u32;
    let mut cases = Vec::new();
    for (name, repetitive, replayed) in
        [("repetitive", true, Drafts::ReplayRight), ("non_repetitive", false, Drafts::ReplayWrong)]
    {
        let ids = prompt(repetitive, vocab, PROMPT_TOKENS);
        let mut expected = None;
        cases.push(run_case(&engine, &args, (name, &ids), Drafts::Lookup, &mut expected)?);
        cases.push(run_case(&engine, &args, (name, &ids), replayed, &mut expected)?);
    }
    report::report(&args, &cases);
    Ok(())
}
