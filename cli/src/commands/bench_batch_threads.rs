//! `k3 bench batch --concurrent`: each conversation on a thread of its own through
//! `Engine::generate` — the path `k3 serve --batch` takes, where the engine's step gate
//! puts the generations' forward passes into shared steps — instead of one driver calling
//! `Engine::step_batch`.
//!
//! Owns: timing the decode of `size` concurrent generations from the moment every one has
//! its first token (they meet there) to the last token, and the bytes read meanwhile.

use std::sync::{Barrier, Mutex, OnceLock};
use std::time::Instant;

use k3_engine::StreamMetrics;
use k3_engine::{CancelToken, DecodeMode, Engine, EventSink, GenerateParams, Sampling, TokenEvent};

use super::runtime_error;
use super::Failure;
use crate::args::BenchBatchArgs;
use k3_bench::batch::SizeFigures;

/// When every generation had its first token, and the engine's counters then.
type Start = OnceLock<(Instant, StreamMetrics)>;

/// One generation's number, tokens and the time of its last token.
type Finished = (usize, Vec<u32>, Option<Instant>);

/// Waits at the first token until every generation has one; notes the last token's time.
struct Meet<'a> {
    engine: &'a Engine,
    barrier: &'a Barrier,
    start: &'a Start,
    last: Option<Instant>,
}

impl EventSink for Meet<'_> {
    fn token(&mut self, event: &TokenEvent<'_>) {
        if event.index == 0 && self.barrier.wait().is_leader() {
            let _ = self.start.set((Instant::now(), self.engine.metrics()));
        }
        self.last = Some(Instant::now());
    }
}

/// `size` generations of `args.tokens` greedy tokens, each on its own thread.
pub(super) fn measure_concurrent(engine: &Engine, size: usize, args: &BenchBatchArgs) -> Result<SizeFigures, Failure> {
    let vocab = engine.config().vocab_size as u32;
    let (barrier, start) = (Barrier::new(size), Start::new());
    let params = GenerateParams {
        max_new_tokens: args.tokens,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let began = Instant::now();
    let results: Mutex<Vec<Finished>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for i in 0..size {
            let (params, barrier, start, results, failure) = (&params, &barrier, &start, &results, &failure);
            scope.spawn(move || {
                let prompt: Vec<u32> =
                    (0..args.prompt_tokens as u32).map(|t| (t * 31 + i as u32 * 97 + 5) % vocab).collect();
                let mut sink = Meet { engine, barrier, start, last: None };
                let mut session = engine.new_session();
                match engine.generate(&mut session, &prompt, params, &CancelToken::new(), &mut sink) {
                    Ok(g) => lock(results).push((i, g.generated, sink.last)),
                    Err(e) => *lock(failure) = Some(e.to_string()),
                }
            });
        }
    });
    if let Some(e) = lock(&failure).take() {
        return Err(runtime_error(e));
    }
    let mut results = std::mem::take(&mut *lock(&results));
    results.sort_by_key(|(i, _, _)| *i);
    let &(from, at_start) = start.get().ok_or_else(|| runtime_error("no generation reached its first token".into()))?;
    let end = results.iter().filter_map(|(_, _, last)| *last).max().unwrap_or(from);
    let read = engine.metrics().since(&at_start);
    let steps = args.tokens.saturating_sub(1).max(1);
    Ok(SizeFigures {
        size,
        prefill: from.saturating_duration_since(began),
        step: end.saturating_duration_since(from) / steps as u32,
        bytes_per_token: (read.expert_bytes_read + read.trunk_bytes_read) as f64 / (steps * size) as f64,
        tokens: results.into_iter().map(|(_, ids, _)| ids).collect(),
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
