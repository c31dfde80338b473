//! The cases of `k3 bench speculate`: generations serial and speculative on one engine
//! (drafts by prompt lookup, or replayed from serial decoding's reply, right or wrong), their
//! ids checked equal, and each case's sums over the rounds.

use k3_bench::speculate::CaseTotals;
use k3_engine::speculate::{DraftSource, Speculation, SpeculationStats};
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, NullSink, Sampling};

use super::drafts::Drafts;
use crate::args::BenchSpeculateArgs;
use crate::commands::{runtime_error, Failure};

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

/// One case: a prompt, where its drafts come from, and its sums.
pub(super) struct Case {
    pub prompt: &'static str,
    pub drafts: Drafts,
    pub totals: CaseTotals,
}

/// Runs one case for `args.rounds` rounds; `expected` is the prompt and its serial reply
/// (what replayed drafts follow), learned from the first serial run when not given.
pub(super) fn run_case(
    engine: &Engine,
    args: &BenchSpeculateArgs,
    (name, ids): (&'static str, &[u32]),
    drafts: Drafts,
    expected: &mut Option<Vec<u32>>,
) -> Result<Case, Failure> {
    let max_draft = usize::from(args.speculate);
    let mut t = CaseTotals::default();
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
