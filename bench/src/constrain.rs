//! `k3 bench constrain`: what constrained decoding costs — a required tool call's reply
//! decoded under its mask at the model's vocabulary, then the same reply's masks replayed at
//! K3's. Each round's seconds go in ([`ConstrainRounds`]); the medians in milliseconds and
//! each mask's share of a decode step come out ([`ConstrainReport`]).

use std::time::Duration;

use k3_plan::stats::median;
use serde::Serialize;

use crate::ratio;

/// Each round's figures, in seconds.
#[derive(Default)]
pub struct ConstrainRounds {
    /// The model's decode step.
    pub step: Vec<f64>,
    /// One mask at the model's vocabulary.
    pub model_mask: Vec<f64>,
    /// One mask at K3's vocabulary.
    pub k3_mask: Vec<f64>,
}

/// `k3 bench constrain --json`: the medians of the rounds.
#[derive(Serialize)]
pub struct ConstrainReport {
    pub rounds: usize,
    pub reply_tokens: usize,
    pub decode_step_ms: f64,
    pub mask_ms: ByVocabulary,
    pub mask_share_of_decode_step: ByVocabulary,
    pub vocabulary: ByModel<usize>,
    pub factory_build_ms: ByModel<f64>,
}

/// A figure at the model's vocabulary and at K3's.
#[derive(Serialize)]
pub struct ByVocabulary {
    pub model_vocabulary: f64,
    pub k3_vocabulary: f64,
}

/// A figure of the model's tokenizer and of K3's.
#[derive(Serialize)]
pub struct ByModel<T> {
    pub model: T,
    pub k3: T,
}

fn ms(s: f64) -> f64 {
    s * 1e3
}

impl ConstrainReport {
    /// The report of `rounds`, for a reply of `reply_tokens`; `vocabularies` and `builds` (the
    /// parser factory's construction) are (the model's, K3's).
    pub fn of(
        rounds: &ConstrainRounds,
        reply_tokens: usize,
        vocabularies: (usize, usize),
        builds: (Duration, Duration),
    ) -> Self {
        let step = median(&rounds.step);
        let (model_mask, k3_mask) = (median(&rounds.model_mask), median(&rounds.k3_mask));
        let share = |mask: f64| ratio(mask, step);
        ConstrainReport {
            rounds: rounds.step.len(),
            reply_tokens,
            decode_step_ms: ms(step),
            mask_ms: ByVocabulary { model_vocabulary: ms(model_mask), k3_vocabulary: ms(k3_mask) },
            mask_share_of_decode_step: ByVocabulary {
                model_vocabulary: share(model_mask),
                k3_vocabulary: share(k3_mask),
            },
            vocabulary: ByModel { model: vocabularies.0, k3: vocabularies.1 },
            factory_build_ms: ByModel { model: ms(builds.0.as_secs_f64()), k3: ms(builds.1.as_secs_f64()) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_the_rounds_medians_in_ms_and_each_masks_share_of_a_step() {
        let rounds = ConstrainRounds {
            step: vec![0.010, 0.020, 0.012],
            model_mask: vec![0.001, 0.003, 0.0012],
            k3_mask: vec![0.006, 0.004, 0.005],
        };
        let r = ConstrainReport::of(&rounds, 9, (512, 163_840), (Duration::from_millis(3), Duration::from_millis(900)));
        assert_eq!((r.rounds, r.reply_tokens), (3, 9));
        assert!((r.decode_step_ms - 12.0).abs() < 1e-9);
        assert!((r.mask_ms.model_vocabulary - 1.2).abs() < 1e-9 && (r.mask_ms.k3_vocabulary - 5.0).abs() < 1e-9);
        assert!((r.mask_share_of_decode_step.k3_vocabulary - 0.005 / 0.012).abs() < 1e-12);
        assert_eq!((r.vocabulary.model, r.vocabulary.k3), (512, 163_840));
        assert_eq!((r.factory_build_ms.model, r.factory_build_ms.k3), (3.0, 900.0));
    }
}
