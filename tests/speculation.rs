//! Exact speculative decoding: drafts by prompt lookup, verified in one batched pass, give
//! the tokens, the logits that chose them and the carried state of serial decoding, bit
//! for bit — greedy and seeded sampling, at every length, with stop ids, over several
//! turns and while streaming.

use k3_engine::speculate::{Drafter, SpeculationStats};
use k3_engine::{
    CancelToken, DecodeMode, Engine, EventSink, FinishReason, GenerateParams, Sampling, Session, TokenEvent,
};
use k3_tests::TINY_CHECKPOINTS;

use crate::gates::{engine, golden};

/// Every event's id, index and logits (as bits).
#[derive(Default)]
struct Events {
    ids: Vec<u32>,
    indices: Vec<usize>,
    logits: Vec<u32>,
}

impl EventSink for Events {
    fn token(&mut self, event: &TokenEvent<'_>) {
        self.ids.push(event.id);
        self.indices.push(event.index);
        self.logits.extend(event.logits.iter().map(|v| v.to_bits()));
    }
}

struct Turn {
    generated: Vec<u32>,
    finish: FinishReason,
    events: Events,
    speculation: SpeculationStats,
}

fn turn(e: &Engine, session: &mut Session, prompt: &[u32], params: &GenerateParams) -> Turn {
    let mut events = Events::default();
    let out = e.generate(session, prompt, params, &CancelToken::new(), &mut events).expect("generate");
    Turn { generated: out.generated, finish: out.finish, events, speculation: out.speculation }
}

fn params(n: usize, sampling: Sampling, mode: DecodeMode) -> GenerateParams {
    GenerateParams { max_new_tokens: n, sampling, stop_ids: vec![], mode }
}

/// A prompt that repeats, so prompt lookup has something to draft from.
fn repetitive_prompt(name: &str) -> Vec<u32> {
    let g = golden(name);
    let mut p = g.prompt.clone();
    for _ in 0..3 {
        p.extend_from_slice(&g.full);
    }
    p
}

/// Runs the same turns serially and speculatively; asserts tokens, events, logits and the
/// carried state after every turn are bit-identical; returns the speculative stats summed.
fn assert_same_as_serial(
    e: &Engine,
    prompts: &[Vec<u32>],
    params: &GenerateParams,
    max_draft: usize,
) -> SpeculationStats {
    let (mut serial, mut fast) = (e.new_session(), e.new_session());
    let mut spec_params = params.clone();
    spec_params.mode = DecodeMode::Speculative { max_draft };
    let mut total = SpeculationStats::default();
    for (i, prompt) in prompts.iter().enumerate() {
        let want = turn(e, &mut serial, prompt, params);
        let got = turn(e, &mut fast, prompt, &spec_params);
        let what = format!("turn {i}, {} tokens, draft ≤ {max_draft}", params.max_new_tokens);
        assert_eq!(got.generated, want.generated, "{what}: tokens");
        assert_eq!(got.finish, want.finish, "{what}: finish");
        assert_eq!(got.events.ids, want.events.ids, "{what}: event ids");
        assert_eq!(got.events.indices, want.events.indices, "{what}: event indices");
        assert!(got.events.logits == want.events.logits, "{what}: the logits that chose each token");
        assert_eq!(fast.tokens(), serial.tokens(), "{what}: session tokens");
        assert!(
            fast.carried().same_bits(serial.carried()),
            "{what}: carried KDA states, conv histories and MLA caches"
        );
        assert_eq!(want.speculation, SpeculationStats::default(), "serial decoding drafts nothing");
        total.verify_passes += got.speculation.verify_passes;
        total.drafted += got.speculation.drafted;
        total.accepted += got.speculation.accepted;
    }
    total
}

/// Drafts the serial reply's own next tokens, spoiling the `spoil`-th token of every
/// `every`-th draft (so some passes are accepted whole and others cut short), deterministic.
struct Oracle {
    prompt_len: usize,
    reply: Vec<u32>,
    len: usize,
    every: usize,
    spoil: usize,
    calls: usize,
}

impl Drafter for Oracle {
    fn next_draft(&mut self, tokens: &[u32], _room: usize) -> Vec<u32> {
        self.calls += 1;
        let at = tokens.len() - self.prompt_len;
        let mut d: Vec<u32> = self.reply.iter().skip(at).take(self.len).copied().collect();
        if self.calls.is_multiple_of(self.every) && self.spoil < d.len() {
            d[self.spoil] = d[self.spoil].wrapping_add(1) % 4; // a token serial decoding did not pick here
            if d[self.spoil] == self.reply[at + self.spoil] {
                d[self.spoil] = (d[self.spoil] + 1) % 4;
            }
        }
        d
    }
}

/// One speculative turn from a fresh session, drafted by an [`Oracle`] that knows `reply`
/// and drafts `len` tokens, spoiling the `spoil`-th of every `every`-th draft.
fn oracle_turn(
    e: &Engine,
    prompt: &[u32],
    params: &GenerateParams,
    reply: &[u32],
    (len, every, spoil): (usize, usize, usize),
) -> (k3_engine::Generation, Events, Session) {
    let mut oracle = Oracle { prompt_len: prompt.len(), reply: reply.to_vec(), len, every, spoil, calls: 0 };
    let mut s = e.new_session();
    let mut events = Events::default();
    let out =
        e.generate_drafting(&mut s, prompt, params, (&mut oracle, None), (&CancelToken::new(), &mut events)).unwrap();
    (out, events, s)
}

/// The generate loop under drafts whose acceptance is known in advance: accepted whole,
/// cut at each position, and never accepted; every length, greedy and seeded sampling (a
/// verified position draws what serial decoding draws), and a stop id inside a draft.
#[test]
fn any_draft_accepted_or_cut_anywhere_gives_serial_decoding_bit_for_bit() {
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(1));
        let g = golden(name);
        let sampled = Sampling::TopP { temperature: 0.8, top_p: 0.95, seed: 5 };
        for (n, sampling) in [(1, Sampling::Greedy), (3, Sampling::Greedy), (17, Sampling::Greedy), (17, sampled)] {
            let serial_params = params(n, sampling, DecodeMode::Incremental);
            let want = turn(&e, &mut e.new_session(), &g.prompt, &serial_params);
            let mut spec_params = serial_params.clone();
            spec_params.mode = DecodeMode::Speculative { max_draft: 32 };
            for (len, every, spoil) in [(4, 1000, 0), (6, 2, 0), (6, 2, 3), (5, 1, 4), (3, 1, 0), (40, 3, 1)] {
                let (out, events, s) = oracle_turn(&e, &g.prompt, &spec_params, &want.generated, (len, every, spoil));
                let what = format!("{name}: {n} tokens, drafts of {len} spoiled at {spoil} every {every}");
                assert_eq!(out.generated, want.generated, "{what}");
                assert!(events.logits == want.events.logits && events.indices == want.events.indices, "{what}: events");
                let mut serial = e.new_session();
                turn(&e, &mut serial, &g.prompt, &serial_params);
                assert!(s.carried().same_bits(serial.carried()), "{what}: carried state");
                let sp = out.speculation;
                if n > 1 {
                    assert!(sp.verify_passes > 0, "{what}: {sp:?}");
                }
                if every == 1 && spoil == 0 {
                    assert_eq!(sp.accepted, 0, "{what}: every draft spoiled at its first token");
                }
                if every == 1000 {
                    assert_eq!(sp.accepted, sp.drafted, "{what}: nothing spoiled");
                }
                if every == 2 && n > 3 {
                    assert!(0 < sp.accepted && sp.accepted < sp.drafted, "{what}: {sp:?}");
                }
            }
            // A stop id inside a draft the model accepts: the reply ends there, like serial's.
            if n > 2 {
                let mut stop_params = spec_params.clone();
                stop_params.stop_ids = vec![want.generated[n / 2]];
                let (out, _, s) = oracle_turn(&e, &g.prompt, &stop_params, &want.generated, (8, 1000, 0));
                let mut serial_stop = stop_params.clone();
                serial_stop.mode = DecodeMode::Incremental;
                let mut serial = e.new_session();
                let want_stop = turn(&e, &mut serial, &g.prompt, &serial_stop);
                assert_eq!(
                    (out.generated, out.finish),
                    (want_stop.generated, FinishReason::Stop),
                    "{name}: stop in a draft"
                );
                assert!(s.carried().same_bits(serial.carried()), "{name}: carried state after a stop in a draft");
            }
        }
    }
}

#[test]
fn greedy_speculation_gives_serial_decodings_tokens_logits_and_state() {
    let mut seen = SpeculationStats::default();
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(1));
        let prompt = repetitive_prompt(name);
        let mut here = SpeculationStats::default();
        for n in [1, 2, 5, 24, 64] {
            for max_draft in [1, 3, 8] {
                let p = params(n, Sampling::Greedy, DecodeMode::Incremental);
                let s = assert_same_as_serial(&e, std::slice::from_ref(&prompt), &p, max_draft);
                assert!(s.accepted <= s.drafted && s.verify_passes <= n, "{name}: {s:?}");
                here.verify_passes += s.verify_passes;
                here.drafted += s.drafted;
                here.accepted += s.accepted;
            }
        }
        eprintln!(
            "{name}: {} of {} draft tokens accepted in {} passes",
            here.accepted, here.drafted, here.verify_passes
        );
        seen.drafted += here.drafted;
        seen.accepted += here.accepted;
    }
    // The trained demo repeats itself, so prompt lookup finds drafts it accepts (the random
    // checkpoints' replies may never repeat a 2-gram). How many passes run beyond the first
    // of each reply follows timings; the drafts the oracle test controls cover the rest.
    assert!(seen.accepted > 0, "some draft tokens were accepted");
}

/// A tentative pass over `[t0 … t4]` keeping `k` positions leaves exactly the state (and
/// then the logits) of feeding `[t0 … t(k-1)]` alone, for every `k`, on every checkpoint.
#[test]
fn a_tentative_pass_keeps_exactly_the_state_of_its_kept_positions() {
    use k3_engine::advanced::model::{LogitsFor, Model, SequenceState};
    use k3_io::format::TensorIndex;
    for name in TINY_CHECKPOINTS {
        let dir = k3_tests::fixture(name);
        let cfg = k3_engine::ModelConfig::load(&dir.join("config.json")).unwrap();
        let model = Model::bind(cfg.clone(), &TensorIndex::open(&dir).unwrap(), None, None).unwrap();
        let g = golden(name);
        let (head, tail) = g.full.split_at(g.full.len() - 6);
        let cancel = CancelToken::new();
        let forward = |tokens: &[u32], state: &mut SequenceState| {
            model.forward(tokens, state, LogitsFor::All, &cancel, None).unwrap().unwrap()
        };
        let mut base = SequenceState::new(&cfg, 256);
        forward(head, &mut base);
        let fresh = || {
            let mut s = SequenceState::new(&cfg, 256);
            forward(head, &mut s);
            s
        };
        for keep in 0..=5 {
            let mut tentative = fresh();
            tentative.begin_tentative();
            forward(&tail[..5], &mut tentative);
            tentative.keep_tentative(&cfg, keep);
            let mut serial = fresh();
            if keep > 0 {
                forward(&tail[..keep], &mut serial);
            }
            assert!(tentative.same_bits(&serial), "{name}: keep {keep} of 5: the carried state");
            let (a, b) = (forward(&tail[keep..], &mut tentative), forward(&tail[keep..], &mut serial));
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "{name}: keep {keep} of 5: the logits after it");
        }
        assert!(!fresh().same_bits(&SequenceState::new(&cfg, 256)), "{name}: same_bits tells states apart");
    }
}

#[test]
fn seeded_sampling_with_speculation_draws_exactly_as_serial_decoding() {
    let mut drafted = 0;
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(2));
        let prompt = repetitive_prompt(name);
        for (seed, temperature) in [(1, 0.3), (7, 0.3), (20261203, 0.7)] {
            let sampling = Sampling::TopP { temperature, top_p: 0.9, seed };
            let p = params(40, sampling, DecodeMode::Incremental);
            drafted += assert_same_as_serial(&e, std::slice::from_ref(&prompt), &p, 4).drafted;
        }
    }
    // Which drafts come follows the sampled tokens and timings; the oracle test controls them.
    eprintln!("{drafted} draft tokens verified under seeded sampling");
}

#[test]
fn a_stop_id_inside_an_accepted_draft_ends_the_reply_where_serial_decoding_does() {
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(1));
        let prompt = repetitive_prompt(name);
        let reply = turn(&e, &mut e.new_session(), &prompt, &params(24, Sampling::Greedy, DecodeMode::Incremental));
        for &stop in reply.generated.iter().skip(1).take(6) {
            let mut p = params(24, Sampling::Greedy, DecodeMode::Incremental);
            p.stop_ids = vec![stop];
            assert_same_as_serial(&e, std::slice::from_ref(&prompt), &p, 6);
        }
    }
}

#[test]
fn a_conversation_continued_after_speculative_turns_matches_serial_decoding() {
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(1));
        let g = golden(name);
        let prompts = [repetitive_prompt(name), g.prompt.clone(), g.full[..4].to_vec()];
        let p = params(12, Sampling::Greedy, DecodeMode::Incremental);
        assert_same_as_serial(&e, &prompts, &p, 5);
    }
}

#[test]
fn speculation_stops_at_the_context_length_like_serial_decoding() {
    for name in TINY_CHECKPOINTS {
        let mut options = k3_engine::EngineOptions::resident(k3_tests::fixture(name), Some(1));
        let prompt = repetitive_prompt(name);
        options.memory.context_length = prompt.len() + 40;
        let e = Engine::load(&options).unwrap();
        let p = params(60, Sampling::Greedy, DecodeMode::Incremental);
        assert_same_as_serial(&e, std::slice::from_ref(&prompt), &p, 8);
        let mut s = e.new_session();
        let out = turn(&e, &mut s, &prompt, &params(60, Sampling::Greedy, DecodeMode::Speculative { max_draft: 8 }));
        assert_eq!(out.finish, FinishReason::ContextFull, "{name}");
        assert_eq!(s.tokens().len(), e.context_length(), "{name}");
    }
}

#[test]
fn a_draft_longer_than_the_limit_is_refused_by_name() {
    let e = engine("tiny-mxfp4", Some(1));
    let p = params(4, Sampling::Greedy, DecodeMode::Speculative { max_draft: 33 });
    let err = e.generate(&mut e.new_session(), &[1, 2], &p, &CancelToken::new(), &mut k3_engine::NullSink).unwrap_err();
    assert!(err.to_string().contains("speculate") && err.to_string().contains("at most 32"), "{err}");
}

/// Streamed (the trunk through its ring from `trunk.bin`, experts through the smallest
/// cache): verify passes read what they read, and the reply, its logits and the carried
/// state are still the resident serial decoding's.
#[test]
fn speculation_while_streaming_gives_the_resident_serial_reply() {
    let name = "tiny-mxfp4";
    let g = golden(name);
    let resident = engine(name, Some(1));
    let serial_params = params(17, Sampling::Greedy, DecodeMode::Incremental);
    let mut serial = resident.new_session();
    let want = turn(&resident, &mut serial, &g.prompt, &serial_params);
    let (dir, trunk) = crate::expert_crc::packed("speculation-streamed");
    let e = crate::expert_crc::streamed(&dir, &trunk).unwrap();
    assert!(e.plan().is_some_and(|p| p.pinned_layers < e.config().n_layers), "the trunk streams");
    let mut spec_params = serial_params.clone();
    spec_params.mode = DecodeMode::Speculative { max_draft: 8 };
    for (len, every, spoil) in [(8, 1000, 0), (5, 2, 2), (4, 1, 0)] {
        let (out, events, s) = oracle_turn(&e, &g.prompt, &spec_params, &want.generated, (len, every, spoil));
        assert_eq!(out.generated, want.generated, "drafts of {len} spoiled at {spoil} every {every}");
        assert!(events.logits == want.events.logits, "the logits that chose each token");
        assert!(s.carried().same_bits(serial.carried()), "the carried state");
        assert!(out.speculation.verify_passes > 0);
    }
}
