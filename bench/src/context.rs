//! `k3 bench context`: decode time per token at several context lengths. The rounds' seconds
//! per token go in ([`ContextReport::of`]); each context's median and its ratio to the first
//! context's come out.

use k3_plan::stats::median;
use serde::Serialize;

use crate::ratio;

/// `k3 bench context --json`: the run's settings and each context's figures.
#[derive(Serialize)]
pub struct ContextReport {
    pub tokens: usize,
    pub rounds: usize,
    pub contexts: Vec<ContextFigures>,
}

/// One context: its rounds' seconds per token, their median, its ratio to the first
/// context's and the KV cache it holds.
#[derive(Serialize)]
pub struct ContextFigures {
    pub context: usize,
    pub seconds_per_token_rounds: Vec<f64>,
    pub seconds_per_token_median: f64,
    pub ratio_to_first: f64,
    pub kv_bytes: u64,
}

/// One context as measured: its length, the KV cache it holds, and each round's seconds per
/// decoded token.
pub struct ContextRounds {
    pub context: usize,
    pub kv_bytes: u64,
    pub seconds_per_token: Vec<f64>,
}

impl ContextReport {
    /// The figures of `measured` (in the order given; the first is the ratios' base).
    pub fn of(tokens: usize, rounds: usize, measured: Vec<ContextRounds>) -> Self {
        let first = measured.first().map_or(0.0, |m| median(&m.seconds_per_token));
        let contexts = measured
            .into_iter()
            .map(|m| {
                let median = median(&m.seconds_per_token);
                ContextFigures {
                    context: m.context,
                    seconds_per_token_median: median,
                    seconds_per_token_rounds: m.seconds_per_token,
                    ratio_to_first: ratio(median, first),
                    kv_bytes: m.kv_bytes,
                }
            })
            .collect();
        ContextReport { tokens, rounds, contexts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_context_is_its_rounds_median_and_its_ratio_to_the_first_contexts() {
        let rounds = |context, s: &[f64]| ContextRounds { context, kv_bytes: 1, seconds_per_token: s.to_vec() };
        let r = ContextReport::of(8, 3, vec![rounds(512, &[0.2, 0.1, 0.3]), rounds(4096, &[0.5, 0.4, 9.0])]);
        let medians: Vec<f64> = r.contexts.iter().map(|c| c.seconds_per_token_median).collect();
        assert_eq!(medians, vec![0.2, 0.5]);
        assert_eq!(r.contexts[0].ratio_to_first, 1.0);
        assert!((r.contexts[1].ratio_to_first - 2.5).abs() < 1e-12);
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.starts_with(r#"{"tokens":8,"rounds":3,"contexts":[{"context":512,"seconds_per_token_rounds":[0.2,0.1,0.3],"seconds_per_token_median":0.2,"#), "{text}");
    }
}
