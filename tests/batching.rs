//! Batched passes (issue 40): a prompt fed in chunks of any size, and a conversation
//! decoded in one pass with others that join and leave, give bit for bit what it gets
//! alone, one token at a time: the same tokens, logits and carried state, whatever the
//! batch, the arrival order, the sampling rule or the thread count.

use k3_engine::sampling::Sampler;
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, Sampling, Session};
use k3_tests::TINY_CHECKPOINTS;

use crate::gates::{engine, Recorder};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A new session fed `prompt` in passes of at most `chunk` rows; with its last logits.
fn prefill(e: &Engine, prompt: &[u32], chunk: usize) -> (Session, Vec<f32>, usize) {
    let mut s = e.new_session();
    e.extend_session(&mut s, prompt).unwrap();
    let mut passes = 0;
    loop {
        passes += 1;
        let out = e.step_batch(&mut [&mut s], chunk, &CancelToken::new()).unwrap().expect("not cancelled");
        if let Some(logits) = out.into_iter().next().flatten() {
            return (s, logits, passes);
        }
    }
}

#[test]
fn a_prefill_in_chunks_of_1_7_64_and_512_equals_token_by_token_decoding() {
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(2));
        let vocab = e.config().vocab_size as u32;
        let prompt: Vec<u32> = (0..530u32).map(|i| (i * 37 + 11) % vocab).collect();
        let (alone, want, passes) = prefill(&e, &prompt, 1);
        assert_eq!(passes, 530, "{name}: one token per pass");
        for chunk in [7, 64, 512] {
            let (s, got, passes) = prefill(&e, &prompt, chunk);
            assert_eq!(passes, 530usize.div_ceil(chunk), "{name}: chunk {chunk}");
            assert_eq!(bits(&got), bits(&want), "{name}: chunk {chunk}, the last position's logits");
            assert!(s.carried().same_bits(alone.carried()), "{name}: chunk {chunk}, the carried state");
        }
        // The engine's own generation (prefill in its plan's chunks) picks from the same logits.
        let params = GenerateParams {
            max_new_tokens: 1,
            sampling: Sampling::Greedy,
            stop_ids: vec![],
            mode: DecodeMode::Incremental,
        };
        let mut rec = Recorder::default();
        e.generate(&mut e.new_session(), &prompt, &params, &CancelToken::new(), &mut rec).unwrap();
        assert_eq!(bits(&rec.logits), bits(&want), "{name}: generate's first logits");
    }
}

/// One conversation of a batch run: its prompt, when it joins, how it samples and stops.
#[derive(Clone)]
struct Plan {
    prompt: Vec<u32>,
    joins_at: usize,
    sampling: Sampling,
    stop_ids: Vec<u32>,
}

/// What a conversation produced: its tokens and the logits each was picked from.
type Reply = (Vec<u32>, Vec<f32>);

/// The conversation alone, through `Engine::generate`.
fn alone(e: &Engine, p: &Plan, n: usize) -> Reply {
    let params = GenerateParams {
        max_new_tokens: n,
        sampling: p.sampling.clone(),
        stop_ids: p.stop_ids.clone(),
        mode: DecodeMode::Incremental,
    };
    let mut rec = Recorder::default();
    let out = e.generate(&mut e.new_session(), &p.prompt, &params, &CancelToken::new(), &mut rec).unwrap();
    (out.generated, rec.logits)
}

/// Every conversation through shared passes: each joins at its step, feeds up to `rows`
/// pending tokens per pass, picks with its own sampler once caught up, and leaves after
/// `n` tokens or a stop id.
fn batched(e: &Engine, plans: &[Plan], n: usize, rows: usize) -> Vec<Reply> {
    struct Live {
        at: usize,
        session: Session,
        sampler: Sampler,
    }
    let mut replies: Vec<Reply> = vec![(vec![], vec![]); plans.len()];
    let mut live: Vec<Live> = Vec::new();
    let mut step = 0;
    let mut done = 0;
    while done < plans.len() {
        for (at, p) in plans.iter().enumerate().filter(|(_, p)| p.joins_at == step) {
            let mut session = e.new_session();
            e.extend_session(&mut session, &p.prompt).unwrap();
            live.push(Live { at, session, sampler: Sampler::new(p.sampling.clone()).unwrap() });
        }
        step += 1;
        if live.is_empty() {
            continue;
        }
        let mut sessions: Vec<&mut Session> = live.iter_mut().map(|l| &mut l.session).collect();
        let out = e.step_batch(&mut sessions, rows, &CancelToken::new()).unwrap().expect("not cancelled");
        let mut leaving = vec![];
        for (k, (l, logits)) in live.iter_mut().zip(out).enumerate() {
            let Some(logits) = logits else { continue };
            let id = l.sampler.pick(&logits);
            let (ids, kept) = &mut replies[l.at];
            ids.push(id);
            kept.extend_from_slice(&logits);
            l.session.push(id);
            if ids.len() == n || plans[l.at].stop_ids.contains(&id) {
                leaving.push(k);
            }
        }
        for k in leaving.into_iter().rev() {
            live.remove(k);
            done += 1;
        }
    }
    replies
}

#[test]
fn each_conversation_in_a_batch_gets_what_it_gets_alone_as_others_join_and_leave() {
    let lengths = [3usize, 40, 9, 17, 1, 70, 12, 5];
    let joins = [0usize, 0, 1, 2, 3, 3, 5, 8];
    let n = 6;
    for name in TINY_CHECKPOINTS {
        let reference = engine(name, Some(2));
        let vocab = reference.config().vocab_size as u32;
        let mut plans: Vec<Plan> = (0..8)
            .map(|i| Plan {
                prompt: (0..lengths[i] as u32).map(|t| (t * 31 + 7 * i as u32 + 3) % vocab).collect(),
                joins_at: joins[i],
                sampling: if i % 2 == 0 {
                    Sampling::Greedy
                } else {
                    Sampling::TopP { temperature: 0.9, top_p: 0.95, seed: 100 + i as u64 }
                },
                stop_ids: vec![],
            })
            .collect();
        // One conversation stops early on the token it picks third when alone.
        let third = alone(&reference, &plans[3], n).0[2];
        plans[3].stop_ids = vec![third];
        let want: Vec<Reply> = plans.iter().map(|p| alone(&reference, p, n)).collect();
        for threads in [1, 3] {
            let e = engine(name, Some(threads));
            for b in [1usize, 2, 3, 5, 8] {
                let got = batched(&e, &plans[..b], n, 16);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g.0, w.0, "{name}: {threads} threads, B = {b}, conversation {i}: tokens");
                    assert_eq!(bits(&g.1), bits(&w.1), "{name}: {threads} threads, B = {b}, conversation {i}: logits");
                }
            }
        }
        // The arrival order does not matter either: everyone at once, in reverse.
        let mut reversed: Vec<Plan> = plans.iter().rev().cloned().collect();
        reversed.iter_mut().for_each(|p| p.joins_at = 0);
        let got = batched(&reference, &reversed, n, 5);
        for (g, w) in got.iter().zip(want.iter().rev()) {
            assert_eq!((&g.0, bits(&g.1)), (&w.0, bits(&w.1)), "{name}: all at once, reversed");
        }
        eprintln!("{name}: 8 conversations batched (B = 1, 2, 3, 5, 8; 1 and 3 threads) equal each alone");
    }
}

#[test]
fn a_batched_session_with_nothing_pending_or_past_the_context_is_refused() {
    let e = engine("tiny-f32", Some(1));
    let mut s = e.new_session();
    let err = e.step_batch(&mut [&mut s], 4, &CancelToken::new()).unwrap_err();
    assert!(err.to_string().contains("pending tokens"), "{err}");
    let too_long = vec![1u32; e.context_length() + 1];
    assert!(e.extend_session(&mut s, &too_long).is_err(), "past the context length");
}

/// A sink that records logits and, at its first token, waits until every generation of the
/// run has its first token too: from then on all of them are inside the engine together.
struct Meeting<'a> {
    rec: Recorder,
    barrier: &'a std::sync::Barrier,
    met: bool,
}

impl k3_engine::EventSink for Meeting<'_> {
    fn token(&mut self, event: &k3_engine::TokenEvent<'_>) {
        if !self.met {
            self.met = true;
            self.barrier.wait();
        }
        self.rec.token(event);
    }
}

/// Every plan generated on a thread of its own at once, each meeting the others at its
/// first token; with `cancel_at` (plan index), that one's generation is cancelled then.
fn concurrently(e: &Engine, plans: &[Plan], n: usize, cancel_at: Option<usize>) -> Vec<Reply> {
    let barrier = std::sync::Barrier::new(plans.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = plans
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let params = GenerateParams {
                        max_new_tokens: n,
                        sampling: p.sampling.clone(),
                        stop_ids: p.stop_ids.clone(),
                        mode: DecodeMode::Incremental,
                    };
                    let cancel = CancelToken::new();
                    if cancel_at == Some(i) {
                        cancel.cancel();
                    }
                    let mut sink = Meeting { rec: Recorder::default(), barrier, met: false };
                    let mut session = e.new_session();
                    let out = e.generate(&mut session, &p.prompt, &params, &cancel, &mut sink).unwrap();
                    if cancel_at == Some(i) {
                        // Cancelled before its first token: it never meets the others.
                        assert_eq!(out.finish, k3_engine::FinishReason::Cancelled);
                        barrier.wait();
                    }
                    (out.generated, sink.rec.logits)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a generation thread panicked")).collect()
    })
}

fn mixed_plans(vocab: u32) -> Vec<Plan> {
    let lengths = [3usize, 40, 9, 17, 1, 70];
    (0..lengths.len())
        .map(|i| Plan {
            prompt: (0..lengths[i] as u32).map(|t| (t * 29 + 5 * i as u32 + 1) % vocab).collect(),
            joins_at: 0,
            sampling: if i % 2 == 0 {
                Sampling::Greedy
            } else {
                Sampling::TopP { temperature: 0.8, top_p: 0.9, seed: 7 + i as u64 }
            },
            stop_ids: vec![],
        })
        .collect()
}

#[test]
fn generations_on_several_threads_share_passes_and_each_gets_what_it_gets_alone() {
    let n = 7;
    for name in TINY_CHECKPOINTS {
        let reference = engine(name, Some(2));
        let plans = mixed_plans(reference.config().vocab_size as u32);
        let want: Vec<Reply> = plans.iter().map(|p| alone(&reference, p, n)).collect();
        for threads in [1, 3] {
            let e = engine(name, Some(threads));
            let got = concurrently(&e, &plans, n, None);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.0, w.0, "{name}: {threads} threads, generation {i}: tokens");
                assert_eq!(bits(&g.1), bits(&w.1), "{name}: {threads} threads, generation {i}: logits");
            }
            let c = e.batch_counters();
            assert_eq!(c.members, 0, "{name}: every generation left the batch");
            assert!(c.widest >= 2, "{name}: {threads} threads, no step carried two generations: {c:?}");
            eprintln!("{name}, {threads} threads: 6 generations at once, {} steps, widest {}", c.steps, c.widest);
        }
    }
}

#[test]
fn a_cancelled_generation_leaves_the_batch_and_the_others_get_what_they_get_alone() {
    let n = 5;
    let reference = engine("tiny-mxfp4", Some(2));
    let plans = mixed_plans(reference.config().vocab_size as u32);
    let want: Vec<Reply> = plans.iter().map(|p| alone(&reference, p, n)).collect();
    let e = engine("tiny-mxfp4", Some(2));
    let got = concurrently(&e, &plans, n, Some(1));
    assert!(got[1].0.is_empty(), "the cancelled one generated nothing");
    for (i, (g, w)) in got.iter().zip(&want).enumerate().filter(|(i, _)| *i != 1) {
        assert_eq!((&g.0, bits(&g.1)), (&w.0, bits(&w.1)), "generation {i}");
    }
}

/// Generations on several threads against a streamed trunk at the smallest budgets (one ring
/// slot, top-k + 1 expert slots): each still gets what it gets alone from a resident engine.
#[test]
fn concurrent_generations_on_a_streamed_trunk_with_the_smallest_cache_get_what_they_get_alone() {
    let n = 5;
    for name in TINY_CHECKPOINTS {
        let reference = engine(name, Some(2));
        let plans = mixed_plans(reference.config().vocab_size as u32);
        let want: Vec<Reply> = plans.iter().map(|p| alone(&reference, p, n)).collect();
        let trunk = crate::trunk::pack(name);
        let smallest_ring = crate::trunk::trunk_budgets(name)[0].0;
        let slot = crate::streaming::slot_bytes(name);
        let top_k = reference.config().moe.top_k as u64;
        let mut memory = k3_engine::MemoryOptions::resident();
        memory.budget = Some(k3_engine::BudgetChoice::Fixed(k3_plan::Budget {
            trunk_bytes: smallest_ring,
            cache_bytes: (top_k + 1) * slot,
        }));
        memory.trunk_dir = Some(trunk);
        memory.io_threads = 2;
        let options = k3_engine::EngineOptions { model_dir: k3_tests::fixture(name), threads: Some(2), memory };
        let e = Engine::load(&options).unwrap();
        let got = concurrently(&e, &plans, n, None);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!((&g.0, bits(&g.1)), (&w.0, bits(&w.1)), "{name}: streamed, generation {i}");
        }
        assert!(e.batch_counters().widest >= 2, "{name}: {:?}", e.batch_counters());
    }
}
