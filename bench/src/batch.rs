//! `k3 bench batch`: several conversations decoded in one pass (or on their own threads)
//! against one conversation. One batch size's measurements go in ([`SizeFigures`]); its
//! aggregate rate and its ratio to the first size's come out ([`SizeRow`], [`BatchReport`]).

use std::time::Duration;

use k3_plan::stats::median;
use serde::Serialize;

/// One batch size as measured.
pub struct SizeFigures {
    pub size: usize,
    pub prefill: Duration,
    /// The decode step (every conversation advances one token).
    pub step: Duration,
    /// Expert and trunk bytes read per generated token during the decode steps.
    pub bytes_per_token: f64,
    /// Each conversation's generated tokens.
    pub tokens: Vec<Vec<u32>>,
}

impl SizeFigures {
    /// From the decode steps' seconds (the median step) and the bytes they read, over
    /// `size` conversations.
    pub fn from_steps(size: usize, prefill: Duration, steps: &[f64], bytes: u64, tokens: Vec<Vec<u32>>) -> Self {
        let measured = steps.len().max(1) * size;
        SizeFigures {
            size,
            prefill,
            step: Duration::from_secs_f64(median(steps)),
            bytes_per_token: bytes as f64 / measured as f64,
            tokens,
        }
    }

    /// Tokens per second over all the conversations.
    pub fn aggregate_tokens_per_second(&self) -> f64 {
        self.size as f64 / self.step.as_secs_f64().max(1e-12)
    }
}

/// `k3 bench batch --json`.
#[derive(Serialize)]
pub struct BatchReport {
    /// Always true: a conversation whose tokens differ between sizes is an error.
    pub tokens_checked_equal: bool,
    pub sizes: Vec<SizeRow>,
}

/// One batch size's figures, against the first size's.
#[derive(Serialize)]
pub struct SizeRow {
    pub batch: usize,
    pub prefill_seconds: f64,
    pub step_seconds: f64,
    pub aggregate_tokens_per_second: f64,
    pub ratio_to_first: f64,
    pub bytes_read_per_token: f64,
}

impl SizeRow {
    pub fn of(r: &SizeFigures, first: &SizeFigures) -> Self {
        SizeRow {
            batch: r.size,
            prefill_seconds: r.prefill.as_secs_f64(),
            step_seconds: r.step.as_secs_f64(),
            aggregate_tokens_per_second: r.aggregate_tokens_per_second(),
            ratio_to_first: r.aggregate_tokens_per_second() / first.aggregate_tokens_per_second(),
            bytes_read_per_token: r.bytes_per_token,
        }
    }
}

impl BatchReport {
    /// Every size's row against the first size's (none for no sizes).
    pub fn of(runs: &[SizeFigures]) -> Self {
        let sizes = runs.first().map_or_else(Vec::new, |first| runs.iter().map(|r| SizeRow::of(r, first)).collect());
        BatchReport { tokens_checked_equal: true, sizes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_is_its_median_step_and_its_rate_against_the_first_size() {
        let one = SizeFigures::from_steps(1, Duration::ZERO, &[0.5, 0.4, 9.0], 300, vec![]);
        let four = SizeFigures::from_steps(4, Duration::ZERO, &[1.0, 0.8], 800, vec![]);
        assert_eq!((one.step.as_secs_f64(), one.bytes_per_token), (0.5, 100.0));
        assert_eq!((four.step.as_secs_f64(), four.bytes_per_token), (0.9, 100.0));
        let report = BatchReport::of(&[one, four]);
        assert_eq!(report.sizes[0].ratio_to_first, 1.0);
        assert!((report.sizes[1].aggregate_tokens_per_second - 4.0 / 0.9).abs() < 1e-9);
        assert!((report.sizes[1].ratio_to_first - (4.0 / 0.9) / 2.0).abs() < 1e-9);
    }
}
