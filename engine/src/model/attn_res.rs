//! Attention Residuals: per-token block snapshots and the softmax mixing of sources
//! (spec §4.2, §4.7).
//!
//! Owns: the folded query vector `f = norm_w ⊙ proj_w`, the source scoring with per-source
//! RMS normalisation, and the mix of RAW sources.
//! Must not: mix normalised sources, or keep the running prefix as an extra source at a
//! block boundary (the caller's snapshot logic in `model::forward` owns that).

use crate::kernels::rms_inverse;
use crate::model::softmax::softmax_weights;

/// Folds the AttnRes norm gain and projection into one query vector (load time, f32).
pub fn fold(norm_w: &[f32], proj_w: &[f32]) -> Vec<f32> {
    norm_w.iter().zip(proj_w).map(|(&a, &b)| a * b).collect()
}

/// Mixes one token's sources: `out = Σ_k softmax_k(score) · s_k`,
/// `score_k = Σ_i (s_k,i · r_k) · f_i`, `r_k = 1/sqrt(mean(s_k²) + eps)`.
pub fn attn_res_mix(sources: &[&[f32]], f: &[f32], eps: f32, out: &mut [f32]) {
    let mut weights: Vec<f32> = sources
        .iter()
        .map(|s| {
            let r = rms_inverse(s, eps);
            let mut acc = 0.0f64;
            for (&si, &fi) in s.iter().zip(f) {
                acc += f64::from((si * r) * fi);
            }
            acc as f32
        })
        .collect();
    softmax_weights(&mut weights);
    out.fill(0.0);
    for (s, &p) in sources.iter().zip(&weights) {
        for (o, &v) in out.iter_mut().zip(s.iter()) {
            *o += p * v;
        }
    }
}

/// Applies [`attn_res_mix`] to each of `n` tokens; each source is `[n][E]`.
pub fn attn_res_batch(sources: &[&[f32]], f: &[f32], eps: f32, hidden: usize, out: &mut [f32]) {
    let n = out.len() / hidden;
    let mut per_token: Vec<&[f32]> = Vec::with_capacity(sources.len());
    for t in 0..n {
        per_token.clear();
        per_token.extend(sources.iter().map(|s| &s[t * hidden..(t + 1) * hidden]));
        attn_res_mix(&per_token, f, eps, &mut out[t * hidden..(t + 1) * hidden]);
    }
}
