//! One batch size's figures in `k3 bench batch`: what the runs measure, the report
//! prints and the threads comparison reuses.
//!
//! Owns: `SizeFigures`.

use std::time::Duration;

/// One batch size's figures.
pub(in crate::commands) struct SizeFigures {
    pub size: usize,
    pub prefill: Duration,
    /// Median decode step (every conversation advances one token).
    pub step: Duration,
    /// Expert and trunk bytes read per generated token during the decode steps.
    pub bytes_per_token: f64,
    /// Each conversation's generated tokens.
    pub tokens: Vec<Vec<u32>>,
}

impl SizeFigures {
    pub(in crate::commands) fn aggregate_tokens_per_second(&self) -> f64 {
        self.size as f64 / self.step.as_secs_f64().max(1e-12)
    }
}
