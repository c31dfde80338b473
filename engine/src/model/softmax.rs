//! The one softmax used by MLA scores and Attention Residual mixing.
//!
//! Owns: max subtraction, f32 `exp`, an f64 normaliser and f32 weights (spec §5).
//! Easy to break: both callers must share this so their arithmetic stays identical.

/// Replaces `scores` with softmax weights.
pub fn softmax_weights(scores: &mut [f32]) {
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f64;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        sum += f64::from(*s);
    }
    for s in scores.iter_mut() {
        *s = (f64::from(*s) / sum) as f32;
    }
}
