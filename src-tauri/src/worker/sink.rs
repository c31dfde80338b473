//! [`ReplySink`]: turns the engine's per-token callbacks into generation events.
//!
//! Owns: UTF-8-safe text deltas (the end-of-message token hidden, as the saved reply drops
//! it; other added tokens shown as their text, as the saved reply has them), prefill progress, and
//! live stats at most every 100 ms (the UI redraws at ≤ 10 Hz).
//! Must not: block: the emitter drops events a closed window cannot take.

use std::time::{Duration, Instant};

use k3_engine::stream::StreamMetrics;
use k3_engine::tokenizer::{StreamDecoder, Tokenizer};
use k3_engine::{EventSink, TokenEvent};

use crate::ipc::events::{EventEmitter, GenerationEvent};

const STATS_EVERY: Duration = Duration::from_millis(100);

pub struct ReplySink<'a> {
    job_id: u64,
    tokenizer: &'a Tokenizer,
    decoder: StreamDecoder,
    emit: &'a mut EventEmitter,
    /// Visible text so far (kept for a failed reply's partial).
    pub text: String,
    started: Instant,
    last_stats: Option<Instant>,
    tokens: u32,
    first_token_at: Option<Duration>,
    metrics: StreamMetrics,
    streamed: bool,
}

impl<'a> ReplySink<'a> {
    pub fn new(job_id: u64, tokenizer: &'a Tokenizer, emit: &'a mut EventEmitter, streamed: bool) -> Self {
        ReplySink {
            job_id,
            tokenizer,
            decoder: StreamDecoder::new(),
            emit,
            text: String::new(),
            started: Instant::now(),
            last_stats: None,
            tokens: 0,
            first_token_at: None,
            metrics: StreamMetrics::default(),
            streamed,
        }
    }

    /// Sends the event through this sink's emitter.
    pub fn emit(&mut self, event: GenerationEvent) {
        (self.emit)(event)
    }

    /// Flushes bytes held back for an incomplete UTF-8 sequence and sends final stats.
    pub fn finish(&mut self) {
        let rest = self.decoder.finish();
        if !rest.is_empty() {
            self.text.push_str(&rest);
            let index = self.tokens.saturating_sub(1);
            self.emit(GenerationEvent::Token { job_id: self.job_id, index, text: rest });
        }
        self.send_stats();
    }

    fn send_stats(&mut self) {
        let elapsed = self.started.elapsed();
        let seconds_per_token = match (self.first_token_at, self.tokens) {
            (Some(first), n) if n > 1 => Some((elapsed - first).as_secs_f64() / (n - 1) as f64),
            _ => None,
        };
        let io_share = self.streamed.then(|| io_share(self.metrics.io_wait, elapsed));
        let true_hit_rate = (self.metrics.expert_requests > 0).then(|| self.metrics.true_hit_rate());
        self.last_stats = Some(Instant::now());
        let event = GenerationEvent::Stats {
            job_id: self.job_id,
            tokens: self.tokens,
            elapsed_ms: elapsed.as_millis() as u64,
            seconds_per_token,
            io_share,
            true_hit_rate,
        };
        self.emit(event);
    }
}

/// I/O wait as a share of wall-clock time (0 for an empty span).
pub fn io_share(io_wait: Duration, wall: Duration) -> f64 {
    if wall.is_zero() {
        0.0
    } else {
        io_wait.as_secs_f64() / wall.as_secs_f64()
    }
}

impl EventSink for ReplySink<'_> {
    fn prefill_progress(&mut self, done: usize, total: usize) {
        self.emit(GenerationEvent::PrefillProgress { job_id: self.job_id, done: done as u32, total: total as u32 });
    }

    fn prefill_done(&mut self, n_prompt_tokens: usize, _elapsed: Duration) {
        let n = n_prompt_tokens as u32;
        self.emit(GenerationEvent::PrefillProgress { job_id: self.job_id, done: n, total: n });
    }

    fn token(&mut self, event: &TokenEvent<'_>) {
        self.tokens += 1;
        self.first_token_at.get_or_insert_with(|| self.started.elapsed());
        self.metrics.accumulate(&event.metrics);
        let text = if Some(event.id) == self.tokenizer.eos_id() {
            String::new()
        } else {
            self.decoder.push(self.tokenizer.token_bytes(event.id).unwrap_or_default())
        };
        self.text.push_str(&text);
        self.emit(GenerationEvent::Token { job_id: self.job_id, index: event.index as u32, text });
        if self.last_stats.is_none_or(|t| t.elapsed() >= STATS_EVERY) {
            self.send_stats();
        }
    }
}
