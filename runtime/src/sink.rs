//! [`ReplySink`]: turns the engine's per-token callbacks into reply progress.
//!
//! Owns: visible text deltas (read by the one rule, [`ReplyReader`]), prefill progress, live figures at most
//! every 100 ms (and once at the end), the probe's token count, and the text streamed so
//! far (a failed reply's partial).
//! Must not: block the engine: handlers are called inline and must return quickly.

use std::time::{Duration, Instant};

use k3_engine::chat::{Channel, ReplyReader};
use k3_engine::StreamMetrics;
use k3_engine::{EventSink, TokenEvent};

use crate::figures::LiveFigures;
use crate::handler::{JobId, ReplyHandler, ReplyProgress};
use crate::probe::MetricsProbe;

const FIGURES_EVERY: Duration = Duration::from_millis(100);

pub(crate) struct ReplySink<'a> {
    job: JobId,
    handler: &'a mut dyn ReplyHandler,
    probe: &'a MetricsProbe,
    reader: ReplyReader<'a>,
    started: Instant,
    last_figures: Option<Instant>,
    tokens: usize,
    first_token_at: Option<Duration>,
    metrics: StreamMetrics,
    weights_stream: bool,
}

impl<'a> ReplySink<'a> {
    pub fn new(
        job: JobId,
        handler: &'a mut dyn ReplyHandler,
        probe: &'a MetricsProbe,
        reader: ReplyReader<'a>,
        weights_stream: bool,
    ) -> Self {
        ReplySink {
            job,
            handler,
            probe,
            reader,
            started: Instant::now(),
            last_figures: None,
            tokens: 0,
            first_token_at: None,
            metrics: StreamMetrics::default(),
            weights_stream,
        }
    }

    /// Flushes bytes held back for an incomplete UTF-8 sequence and sends final figures.
    pub fn finish(&mut self) {
        if let Some(piece) = self.reader.finish() {
            let index = self.tokens.saturating_sub(1);
            self.handler.progress(self.job, ReplyProgress::Text { index, text: piece.text, channel: piece.channel });
        }
        self.send_figures();
    }

    /// The response text streamed so far (a failed reply's partial).
    pub fn partial(&self) -> String {
        self.reader.response().to_string()
    }

    fn send_figures(&mut self) {
        let figures = LiveFigures::now(
            self.tokens,
            self.first_token_at,
            self.started.elapsed(),
            &self.metrics,
            self.weights_stream,
        );
        self.last_figures = Some(Instant::now());
        self.handler.progress(self.job, ReplyProgress::Figures(figures));
    }
}

impl EventSink for ReplySink<'_> {
    fn prefill_progress(&mut self, done: usize, total: usize) {
        self.handler.progress(self.job, ReplyProgress::Prefill { done, total });
    }

    fn prefill_done(&mut self, n_prompt_tokens: usize, _elapsed: Duration) {
        let n = n_prompt_tokens;
        self.handler.progress(self.job, ReplyProgress::Prefill { done: n, total: n });
    }

    fn token(&mut self, event: &TokenEvent<'_>) {
        self.tokens += 1;
        self.first_token_at.get_or_insert_with(|| self.started.elapsed());
        self.metrics.accumulate(&event.metrics);
        self.probe.generated(self.job, event.index, event.elapsed, event.metrics);
        // One event per token, empty for markup, so the front ends count tokens by them.
        let piece = self.reader.push(event.id);
        let (text, channel) = piece.map_or((String::new(), Channel::Response), |p| (p.text, p.channel));
        self.handler.progress(self.job, ReplyProgress::Text { index: event.index, text, channel });
        for delta in self.reader.take_call_deltas() {
            self.handler.progress(self.job, ReplyProgress::ToolCall(delta));
        }
        if self.last_figures.is_none_or(|t| t.elapsed() >= FIGURES_EVERY) {
            self.send_figures();
        }
    }
}
