//! Cancellation and per-token events: how a caller follows and stops a generation.
//!
//! Owns: [`CancelToken`] (checked between layers, between routed experts and inside
//! every streamed read and its waits), [`TokenEvent`] and the [`EventSink`]
//! trait the CLI and the app implement.
//! Must not: carry global state; every generation gets its own token and sink.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A cheap, cloneable flag that stops a generation: between layers and routed experts,
/// and inside streamed reads before each piece and while waiting for one (so a slow drive
/// delays a stop by at most the pieces already in flight).
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    /// Requests a stop; the engine notices at the next layer, expert or read piece.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// One generated token, with the logits that chose it.
#[derive(Debug)]
pub struct TokenEvent<'a> {
    /// Zero-based index among the generated tokens.
    pub index: usize,
    pub id: u32,
    /// The `[vocab]` logits of the position that produced `id`.
    pub logits: &'a [f32],
    /// Time spent producing this token (prefill included for index 0).
    pub elapsed: Duration,
    /// What streaming did for this token.
    pub metrics: crate::stream::StreamMetrics,
}

/// Receives generation progress.
pub trait EventSink {
    /// Called after each prompt chunk: `done` of `total` pending positions are folded in.
    fn prefill_progress(&mut self, _done: usize, _total: usize) {}
    /// Called once the prompt has been processed.
    fn prefill_done(&mut self, _n_prompt_tokens: usize, _elapsed: Duration) {}
    /// Called for every generated token, in order.
    fn token(&mut self, event: &TokenEvent<'_>);
}

/// A sink that ignores everything.
pub struct NullSink;

impl EventSink for NullSink {
    fn token(&mut self, _event: &TokenEvent<'_>) {}
}
