//! The one definition of every figure derived from a generation: seconds per token,
//! I/O share, true resident hit rate, bytes read.
//!
//! Owns: [`ReplyFigures`] (a finished reply) and [`LiveFigures`] (a reply in progress),
//! and the formulas they share. The app's stats, the CLI's stats line and the server's
//! usage all print these; none computes its own.
//! Must not: mix definitions: seconds per token is DECODE time per token after the
//! first — (wall − time to first token) / (tokens − 1) — and `None` below two tokens
//! (the first token's time is prefill, reported as time to first token).

use std::time::Duration;

use k3_engine::Generation;
use k3_engine::StreamMetrics;

/// Decode seconds per token: `(elapsed − first_token_at) / (n_tokens − 1)`.
pub fn seconds_per_token(n_tokens: usize, first_token_at: Duration, elapsed: Duration) -> Option<f64> {
    (n_tokens > 1).then(|| elapsed.saturating_sub(first_token_at).as_secs_f64() / (n_tokens - 1) as f64)
}

/// I/O wait as a share of wall-clock time (0 for an empty span).
pub fn io_share(io_wait: Duration, wall: Duration) -> f64 {
    if wall.is_zero() {
        0.0
    } else {
        io_wait.as_secs_f64() / wall.as_secs_f64()
    }
}

/// True resident hit rate when any expert was requested.
pub fn true_hit_rate(m: &StreamMetrics) -> Option<f64> {
    (m.expert_requests > 0).then(|| m.true_hit_rate())
}

/// The figures of one finished generation.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyFigures {
    /// Positions of the conversation before the reply (earlier turns and this prompt).
    pub prompt_tokens: usize,
    /// Positions this call had to prefill (only the new turn when history was reused).
    pub prefilled_tokens: usize,
    pub output_tokens: usize,
    pub time_to_first_token: Duration,
    pub total: Duration,
    pub seconds_per_token: Option<f64>,
    /// `Some` only when weights stream (with everything resident there is no I/O).
    pub io_share: Option<f64>,
    pub true_hit_rate: Option<f64>,
    pub bytes_read: u64,
    pub io_wait: Duration,
    pub peak_rss_bytes: Option<u64>,
    pub metrics: StreamMetrics,
    /// Positions the plan reserves for the conversation (its context length); `None` for
    /// a remote reply.
    pub context_length: Option<usize>,
}

impl ReplyFigures {
    /// Figures of `g`, whose session now holds `session_tokens` of `context_length` positions.
    pub fn of(g: &Generation, (session_tokens, context_length): (usize, usize), streamed: bool) -> Self {
        let n = g.generated.len();
        ReplyFigures {
            prompt_tokens: session_tokens.saturating_sub(n),
            prefilled_tokens: g.n_prefilled,
            output_tokens: n,
            time_to_first_token: g.prefill_time,
            total: g.total_time,
            seconds_per_token: seconds_per_token(n, g.prefill_time, g.total_time),
            io_share: streamed.then(|| io_share(g.metrics.io_wait(), g.total_time)),
            true_hit_rate: true_hit_rate(&g.metrics),
            bytes_read: g.metrics.expert_bytes_read + g.metrics.trunk_bytes_read + g.metrics.vocab_bytes_read,
            io_wait: g.metrics.io_wait(),
            peak_rss_bytes: g.peak_rss_bytes,
            metrics: g.metrics,
            context_length: Some(context_length),
        }
    }

    /// True when the conversation holds 90 % or more of its context
    /// ([`k3_plan::nearly_full`]): the front ends warn before it is full.
    pub fn context_nearly_full(&self) -> bool {
        let used = (self.prompt_tokens + self.output_tokens) as u64;
        self.context_length.is_some_and(|limit| k3_plan::nearly_full(used, limit as u64))
    }

    /// Compute time: wall clock less the time spent waiting for reads.
    pub fn compute(&self) -> Duration {
        self.total.saturating_sub(self.io_wait)
    }
}

/// The figures of a reply in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFigures {
    pub tokens: usize,
    pub elapsed: Duration,
    pub seconds_per_token: Option<f64>,
    pub io_share: Option<f64>,
    pub true_hit_rate: Option<f64>,
}

impl LiveFigures {
    /// After `tokens` tokens, the first at `first_token_at`, with `metrics` so far.
    pub fn now(
        tokens: usize,
        first_token_at: Option<Duration>,
        elapsed: Duration,
        metrics: &StreamMetrics,
        streamed: bool,
    ) -> Self {
        LiveFigures {
            tokens,
            elapsed,
            seconds_per_token: first_token_at.and_then(|first| seconds_per_token(tokens, first, elapsed)),
            io_share: streamed.then(|| io_share(metrics.io_wait(), elapsed)),
            true_hit_rate: true_hit_rate(metrics),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_per_token_is_decode_time_after_the_first_token() {
        let ms = Duration::from_millis;
        assert_eq!(seconds_per_token(0, ms(0), ms(0)), None);
        assert_eq!(seconds_per_token(1, ms(500), ms(500)), None);
        assert_eq!(seconds_per_token(5, ms(1000), ms(3000)), Some(0.5));
    }

    #[test]
    fn io_share_of_an_empty_span_is_zero() {
        assert_eq!(io_share(Duration::from_secs(1), Duration::ZERO), 0.0);
        assert_eq!(io_share(Duration::from_millis(250), Duration::from_secs(1)), 0.25);
    }
}
