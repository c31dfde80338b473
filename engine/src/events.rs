//! Cancellation and per-token events: how a caller follows and stops a generation.
//!
//! Owns: [`CancelToken`] (checked between layers, between routed experts and inside
//! every streamed read and its waits), [`TokenEvent`] and the [`EventSink`]
//! trait the CLI and the app implement.
//! Must not: carry global state; every generation gets its own token and sink.

use std::time::Duration;

pub use k3_io::CancelToken;

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
