//! What `k3 bench constrain` prints: the medians of the rounds as text, or `--json` derived
//! from the typed [`ConstrainReport`] (milliseconds, and each mask's share of a step).

use std::time::Duration;

use serde::Serialize;

use crate::out::Json;

/// The run's medians, in seconds; each pair is (the model's vocabulary, K3's).
pub(super) struct ConstrainFigures {
    pub rounds: usize,
    pub reply_tokens: usize,
    /// The model's decode step.
    pub step: f64,
    /// One mask.
    pub masks: (f64, f64),
    /// Token ids in each vocabulary.
    pub vocabularies: (usize, usize),
    /// The parser factory's construction.
    pub builds: (Duration, Duration),
}

/// `k3 bench constrain --json`.
#[derive(Serialize)]
struct ConstrainReport {
    rounds: usize,
    reply_tokens: usize,
    decode_step_ms: f64,
    mask_ms: ByVocabulary,
    mask_share_of_decode_step: ByVocabulary,
    vocabulary: ByModel<usize>,
    factory_build_ms: ByModel<f64>,
}

/// A figure at the model's vocabulary and at K3's.
#[derive(Serialize)]
struct ByVocabulary {
    model_vocabulary: f64,
    k3_vocabulary: f64,
}

/// A figure of the model's tokenizer and of K3's.
#[derive(Serialize)]
struct ByModel<T> {
    model: T,
    k3: T,
}

fn ms(s: f64) -> f64 {
    s * 1e3
}

pub(super) fn print(f: &ConstrainFigures, json: bool) {
    let (step, (demo_mask, k3_mask)) = (f.step, f.masks);
    let (demo_build, k3_build) = (ms(f.builds.0.as_secs_f64()), ms(f.builds.1.as_secs_f64()));
    if json {
        let report = ConstrainReport {
            rounds: f.rounds,
            reply_tokens: f.reply_tokens,
            decode_step_ms: ms(step),
            mask_ms: ByVocabulary { model_vocabulary: ms(demo_mask), k3_vocabulary: ms(k3_mask) },
            mask_share_of_decode_step: ByVocabulary {
                model_vocabulary: demo_mask / step,
                k3_vocabulary: k3_mask / step,
            },
            vocabulary: ByModel { model: f.vocabularies.0, k3: f.vocabularies.1 },
            factory_build_ms: ByModel { model: demo_build, k3: k3_build },
        };
        println!("{}", Json(&report));
        return;
    }
    println!(
        "constrained decoding, median of {} rounds, a {}-token reply (a required call):",
        f.rounds, f.reply_tokens
    );
    println!("  decode step on this model:          {:8.3} ms", ms(step));
    println!(
        "  mask, model vocabulary ({:>6} ids): {:8.3} ms  ({:.1} % of a step)",
        f.vocabularies.0,
        ms(demo_mask),
        100.0 * demo_mask / step
    );
    println!(
        "  mask, K3 vocabulary ({:>6} ids):    {:8.3} ms  ({:.1} % of this model's step)",
        f.vocabularies.1,
        ms(k3_mask),
        100.0 * k3_mask / step
    );
    println!("  parser factory built once: {demo_build:.0} ms (model), {k3_build:.0} ms (K3)");
}
