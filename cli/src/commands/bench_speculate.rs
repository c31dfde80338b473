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
//! Must not: time the prompt's prefill (the same pass in both modes) as decoding; let a
//! replayed draft change an output (the engine verifies it like any other).

use k3_engine::speculate::{DraftSource, Speculation, SpeculationStats};
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, NullSink, Sampling};
use serde_json::json;

use super::{load_engine, runtime_error, Failure};
use crate::args::BenchSpeculateArgs;

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

/// Where a case's drafts come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drafts {
    /// Prompt lookup, as `run`, `chat` and the app draft.
    Lookup,
    /// Serial decoding's own next tokens: every draft token is accepted.
    ReplayRight,
    /// Serial decoding's next tokens with the first one changed: nothing is accepted.
    ReplayWrong,
}

impl Drafts {
    fn label(self) -> &'static str {
        match self {
            Drafts::Lookup => "prompt lookup",
            Drafts::ReplayRight => "replayed, every draft right",
            Drafts::ReplayWrong => "replayed, every draft wrong",
        }
    }
}

/// Drafts from a known token sequence (the prompt and serial decoding's reply), right or
/// with each draft's first token changed.
struct Replay {
    expected: Vec<u32>,
    right: bool,
    vocab: u32,
}

impl DraftSource for Replay {
    fn propose(&mut self, tokens: &[u32], max: usize) -> Vec<u32> {
        let next = self.expected.get(tokens.len()..).unwrap_or_default();
        let mut draft: Vec<u32> = next.iter().take(max).copied().collect();
        if let (false, Some(first)) = (self.right, draft.first_mut()) {
            *first = (*first + 1) % self.vocab;
        }
        draft
    }
}

/// One generation's decode figures.
struct Run {
    generated: Vec<u32>,
    decode_seconds: f64,
    speculation: SpeculationStats,
}

/// Generates from `prompt` in a fresh session, serially (`drafts: None`) or speculatively.
fn run(
    engine: &Engine,
    prompt: &[u32],
    tokens: usize,
    drafts: Option<(Drafts, &[u32])>,
    max_draft: usize,
) -> Result<Run, Failure> {
    let mode = if drafts.is_some() { DecodeMode::Speculative { max_draft } } else { DecodeMode::Incremental };
    let params = GenerateParams { max_new_tokens: tokens, sampling: Sampling::Greedy, stop_ids: vec![], mode };
    let vocab = engine.config().vocab_size as u32;
    let replay = |right| Replay { expected: drafts.map_or(vec![], |(_, e)| e.to_vec()), right, vocab };
    let mut lookup = Speculation::new(max_draft);
    let mut right = Speculation::with_source(max_draft, replay(true));
    let mut wrong = Speculation::with_source(max_draft, replay(false));
    let drafter: &mut dyn k3_engine::speculate::Drafter = match drafts.map(|(d, _)| d) {
        None | Some(Drafts::Lookup) => &mut lookup,
        Some(Drafts::ReplayRight) => &mut right,
        Some(Drafts::ReplayWrong) => &mut wrong,
    };
    let mut session = engine.new_session();
    let out = engine.generate_drafting(
        &mut session,
        prompt,
        &params,
        (drafter, None),
        (&CancelToken::new(), &mut NullSink),
    )?;
    let decode_seconds = (out.total_time - out.prefill_time).as_secs_f64();
    Ok(Run { generated: out.generated, decode_seconds, speculation: out.speculation })
}

/// Sums of one case's runs in each mode.
#[derive(Default)]
struct Totals {
    serial_seconds: f64,
    speculative_seconds: f64,
    decoded: usize,
    stats: SpeculationStats,
}

/// One case: a prompt, where its drafts come from, and its sums.
struct Case {
    prompt: &'static str,
    drafts: Drafts,
    totals: Totals,
}

/// Runs one case for `args.rounds` rounds; `expected` is the prompt and its serial reply
/// (what replayed drafts follow), learned from the first serial run when not given.
fn run_case(
    engine: &Engine,
    args: &BenchSpeculateArgs,
    (name, ids): (&'static str, &[u32]),
    drafts: Drafts,
    expected: &mut Option<Vec<u32>>,
) -> Result<Case, Failure> {
    let max_draft = usize::from(args.speculate);
    let mut t = Totals::default();
    for round in 0..args.rounds {
        // Alternate which mode runs first (the cache is warmer for the second); replayed
        // drafts need serial decoding's reply first.
        let serial_first = round % 2 == 0 || expected.is_none();
        let serial = if serial_first { Some(run(engine, ids, args.tokens, None, max_draft)?) } else { None };
        if let (None, Some(s)) = (expected.as_ref(), serial.as_ref()) {
            *expected = Some([ids, &s.generated].concat());
        }
        let known = expected.as_deref().unwrap_or_default();
        let fast = run(engine, ids, args.tokens, Some((drafts, known)), max_draft)?;
        let serial = match serial {
            Some(s) => s,
            None => run(engine, ids, args.tokens, None, max_draft)?,
        };
        if serial.generated != fast.generated {
            return Err(runtime_error(format!(
                "{name} prompt, {} drafts, round {round}: speculative decoding generated {:?}, serial {:?}",
                drafts.label(),
                fast.generated,
                serial.generated
            )));
        }
        t.serial_seconds += serial.decode_seconds;
        t.speculative_seconds += fast.decode_seconds;
        t.decoded += serial.generated.len().saturating_sub(1);
        t.stats.verify_passes += fast.speculation.verify_passes;
        t.stats.drafted += fast.speculation.drafted;
        t.stats.accepted += fast.speculation.accepted;
    }
    Ok(Case { prompt: name, drafts, totals: t })
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
    report(&args, &cases);
    Ok(())
}

fn report(args: &BenchSpeculateArgs, cases: &[Case]) {
    let figures: Vec<_> = cases
        .iter()
        .map(|c| {
            let t = &c.totals;
            let rate = |s: f64| if s > 0.0 { t.decoded as f64 / s } else { 0.0 };
            let (serial, fast) = (rate(t.serial_seconds), rate(t.speculative_seconds));
            let acceptance = if t.stats.drafted > 0 { t.stats.accepted as f64 / t.stats.drafted as f64 } else { 0.0 };
            json!({
                "prompt": c.prompt,
                "drafts": c.drafts.label(),
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
        outln!("{}", json!({ "max_draft": args.speculate, "rounds": args.rounds, "cases": figures }));
        return;
    }
    for f in &figures {
        outln!(
            "{} prompt, {}: {:.3} tok/s serial, {:.3} tok/s speculative ({:.2}×) · {} of {} draft tokens accepted ({:.0} %) in {} verify passes · tokens identical",
            f["prompt"].as_str().unwrap_or(""),
            f["drafts"].as_str().unwrap_or(""),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_drafts_the_known_reply_right_or_with_its_first_token_changed() {
        let expected = vec![5, 6, 7, 8, 9];
        let mut right = Replay { expected: expected.clone(), right: true, vocab: 10 };
        assert_eq!(right.propose(&[5, 6], 2), vec![7, 8]);
        assert_eq!(right.propose(&[5, 6, 7, 8], 3), vec![9], "the draft ends with the reply");
        assert_eq!(right.propose(&expected, 3), Vec::<u32>::new());
        let mut wrong = Replay { expected, right: false, vocab: 10 };
        assert_eq!(wrong.propose(&[5, 6], 2), vec![8, 8]);
        assert_eq!(wrong.propose(&[5, 6, 7, 8], 1), vec![0], "changed within the vocabulary");
    }
}
