//! Choosing the next token: greedy arg-max, or temperature + top-p with an explicit seed.
//!
//! Owns: the sampling rules and their validation (a NaN temperature or a top-p outside
//! (0, 1] is refused, never used).
//! Must not: use a global or time-seeded RNG; the same seed gives the same tokens.
//! Easy to break: greedy ties go to the LOWEST index (spec §5, invariant 4).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::constraint::TokenMask;
use crate::error::{Error, Result};

/// How to pick tokens.
#[derive(Debug, Clone, PartialEq)]
pub enum Sampling {
    Greedy,
    /// Softmax of `logits / temperature`, restricted to the smallest top set whose mass
    /// reaches `top_p`, sampled with a ChaCha8 RNG seeded by `seed`.
    TopP {
        temperature: f32,
        top_p: f32,
        seed: u64,
    },
}

impl Sampling {
    /// The one rule every front end (CLI, app, server, queue) turns a user's settings into
    /// a sampling rule by: temperature 0 is greedy (top-p and seed do not matter then);
    /// any other temperature samples, and [`Sampling::validate`] refuses what is not a
    /// positive finite temperature or a top-p in (0, 1].
    pub fn from_user(temperature: f32, top_p: f32, seed: u64) -> Sampling {
        if temperature == 0.0 {
            Sampling::Greedy
        } else {
            Sampling::TopP { temperature, top_p, seed }
        }
    }

    pub fn validate(&self) -> Result<()> {
        if let Sampling::TopP { temperature, top_p, .. } = *self {
            if !(temperature.is_finite() && temperature > 0.0) {
                return Err(Error::Option {
                    option: "temperature",
                    reason: format!("{temperature} must be a finite number > 0"),
                });
            }
            if !(top_p > 0.0 && top_p <= 1.0) {
                return Err(Error::Option { option: "top-p", reason: format!("{top_p} must be in (0, 1]") });
            }
        }
        Ok(())
    }
}

/// Stateful token picker for one generation.
pub struct Sampler {
    rule: Sampling,
    rng: ChaCha8Rng,
}

impl Sampler {
    pub fn new(rule: Sampling) -> Result<Self> {
        rule.validate()?;
        let seed = match rule {
            Sampling::TopP { seed, .. } => seed,
            Sampling::Greedy => 0,
        };
        Ok(Sampler { rule, rng: ChaCha8Rng::seed_from_u64(seed) })
    }

    /// Picks a token id from one position's logits.
    pub fn pick(&mut self, logits: &[f32]) -> u32 {
        match self.rule {
            Sampling::Greedy => argmax(logits),
            Sampling::TopP { temperature, top_p, .. } => {
                let u: f64 = self.rng.random();
                sample_top_p(logits, temperature, top_p, u)
            }
        }
    }

    /// Picks a token id among those `mask` allows (one draw of the RNG, as `pick`): the
    /// logits keep their values; the others are out of the choice.
    pub fn pick_allowed(&mut self, logits: &[f32], mask: &TokenMask) -> u32 {
        let masked: Vec<f32> = logits
            .iter()
            .enumerate()
            .map(|(i, &v)| if mask.allows(i as u32) { v } else { f32::NEG_INFINITY })
            .collect();
        let id = self.pick(&masked);
        if mask.allows(id) {
            return id;
        }
        // Every allowed logit is NaN or −∞: the lowest allowed id.
        (0..logits.len() as u32).find(|&i| mask.allows(i)).unwrap_or(id)
    }
}

/// Index of the largest logit; the lowest index wins ties; NaN never wins.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] || logits[best].is_nan() && !v.is_nan() {
            best = i;
        }
    }
    best as u32
}

/// Top-p sampling with a given uniform draw `u ∈ [0, 1)`.
fn sample_top_p(logits: &[f32], temperature: f32, top_p: f32, u: f64) -> u32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let t = f64::from(temperature);
    let mut probs: Vec<(u32, f64)> =
        logits.iter().enumerate().map(|(i, &l)| (i as u32, ((f64::from(l) - f64::from(max)) / t).exp())).collect();
    // Descending probability, lower id first among equals: a total, deterministic order.
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: f64 = probs.iter().map(|p| p.1).sum();
    let mut kept = 0.0;
    let mut n_keep = 0;
    for p in &probs {
        kept += p.1 / total;
        n_keep += 1;
        if kept >= f64::from(top_p) {
            break;
        }
    }
    let nucleus = &probs[..n_keep];
    let mass: f64 = nucleus.iter().map(|p| p.1).sum();
    let mut target = u * mass;
    for p in nucleus {
        if target < p.1 {
            return p.0;
        }
        target -= p.1;
    }
    nucleus[n_keep - 1].0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_temperature_zero_is_greedy_and_anything_else_samples_or_is_refused() {
        assert_eq!(Sampling::from_user(0.0, 0.5, 9), Sampling::Greedy);
        assert_eq!(Sampling::from_user(0.7, 0.9, 9), Sampling::TopP { temperature: 0.7, top_p: 0.9, seed: 9 });
        assert!(Sampling::from_user(-1.0, 0.9, 9).validate().is_err());
        assert!(Sampling::from_user(f32::NAN, 0.9, 9).validate().is_err());
    }
}
