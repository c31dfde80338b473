//! `k3 bench speculate`: decode rates serial and speculative, case by case. One case's sums
//! over its rounds go in ([`CaseTotals`]); its rates, their ratio and the drafts' acceptance
//! come out ([`CaseFigures`], [`SpeculateReport`]).

use k3_engine::speculate::SpeculationStats;
use serde::Serialize;

use crate::ratio;

/// Sums of one case's runs in each mode.
#[derive(Default)]
pub struct CaseTotals {
    pub serial_seconds: f64,
    pub speculative_seconds: f64,
    pub decoded: usize,
    pub stats: SpeculationStats,
}

/// `k3 bench speculate --json`.
#[derive(Serialize)]
pub struct SpeculateReport {
    pub max_draft: u8,
    pub rounds: usize,
    pub cases: Vec<CaseFigures>,
}

/// One case's figures over its rounds.
#[derive(Serialize)]
pub struct CaseFigures {
    pub prompt: &'static str,
    pub drafts: &'static str,
    pub decoded_tokens: usize,
    pub serial_tokens_per_second: f64,
    pub speculative_tokens_per_second: f64,
    pub speedup: f64,
    pub verify_passes: usize,
    pub drafted: usize,
    pub accepted: usize,
    pub acceptance: f64,
    /// Always true: a difference is an error, never a figure.
    pub tokens_identical: bool,
}

impl CaseFigures {
    /// The figures of the case `prompt` with drafts from `drafts` (both in words).
    pub fn of(prompt: &'static str, drafts: &'static str, t: &CaseTotals) -> Self {
        let (serial, fast) =
            (ratio(t.decoded as f64, t.serial_seconds), ratio(t.decoded as f64, t.speculative_seconds));
        CaseFigures {
            prompt,
            drafts,
            decoded_tokens: t.decoded,
            serial_tokens_per_second: serial,
            speculative_tokens_per_second: fast,
            speedup: ratio(fast, serial),
            verify_passes: t.stats.verify_passes,
            drafted: t.stats.drafted,
            accepted: t.stats.accepted,
            acceptance: ratio(t.stats.accepted as f64, t.stats.drafted as f64),
            tokens_identical: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cases_rates_are_its_tokens_over_each_modes_seconds() {
        let mut t = CaseTotals { serial_seconds: 4.0, speculative_seconds: 2.5, decoded: 10, ..Default::default() };
        (t.stats.drafted, t.stats.accepted, t.stats.verify_passes) = (8, 6, 3);
        let f = CaseFigures::of("code", "prompt lookup", &t);
        assert_eq!((f.serial_tokens_per_second, f.speculative_tokens_per_second), (2.5, 4.0));
        assert_eq!((f.speedup, f.acceptance, f.verify_passes), (1.6, 0.75, 3));
        let none = CaseFigures::of("prose", "prompt lookup", &CaseTotals::default());
        assert_eq!((none.speedup, none.acceptance), (0.0, 0.0));
    }
}
