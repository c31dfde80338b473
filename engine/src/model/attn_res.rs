//! Attention Residuals (spec §4.2, §4.7): per-token block snapshots, the running partial
//! sum of the current block, and the softmax mixing of sources.
//!
//! Owns: the folded query vector `f = norm_w ⊙ proj_w`, the source scoring with per-source
//! RMS normalisation, the mix of RAW sources, and [`Residuals`]: the bookkeeping of one
//! forward call (snapshots first, then the partial sum; the boundary rule).
//! Must not: mix normalised sources, keep the partial sum as an extra source after it
//! became a snapshot at a block boundary, or outlive a forward call (spec §4.8: blocks and
//! prefix are rebuilt per token, never carried).
//! Easy to break: source order (completed blocks oldest first, the partial sum last) and
//! the first module output of a block, which is copied, not added to zero (`0.0 + -0.0`
//! would turn a negative zero positive).

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

/// The Attention Residual sums of one forward call, per token: the completed block
/// snapshots and the running partial sum of the current block (the spec's `prefix`, which
/// flows from layer to layer).
pub struct Residuals {
    /// Completed block snapshots, oldest (the embedding) first, each `[n_tokens × hidden]`.
    blocks: Vec<Vec<f32>>,
    /// The partial sum of the current block, `[n_tokens × hidden]`; empty from
    /// [`Residuals::close_block`] until the next [`Residuals::add`].
    partial: Vec<f32>,
    hidden: usize,
    eps: f32,
}

impl Residuals {
    /// Starts a forward call: no snapshot yet, the embedding `[n_tokens × hidden]` is the
    /// partial sum.
    pub fn new(embedding: Vec<f32>, hidden: usize, eps: f32) -> Self {
        Residuals { blocks: Vec::new(), partial: embedding, hidden, eps }
    }

    /// AttnRes before attention into `out` (`[n_tokens × hidden]`): a plain copy of the
    /// partial sum while no snapshot exists (layer 0), else [`Residuals::mix_into`].
    pub fn mix_before_attention(&self, query: &[f32], out: &mut [f32]) {
        if self.blocks.is_empty() {
            out.copy_from_slice(&self.partial);
        } else {
            self.mix_into(query, out);
        }
    }

    /// AttnRes with the folded `query` (`[hidden]`) over the snapshots, then the partial
    /// sum (left out while the current block is still empty), into `out`
    /// (`[n_tokens × hidden]`).
    pub fn mix_into(&self, query: &[f32], out: &mut [f32]) {
        let current = (!self.partial.is_empty()).then_some(self.partial.as_slice());
        let sources: Vec<&[f32]> = self.blocks.iter().map(Vec::as_slice).chain(current).collect();
        attn_res_batch(&sources, query, self.eps, self.hidden, out);
    }

    /// A block boundary: the partial sum becomes a snapshot and the new block starts empty.
    pub fn close_block(&mut self) {
        self.blocks.push(std::mem::take(&mut self.partial));
    }

    /// Adds a module output (`[n_tokens × hidden]`) to the partial sum; the first output
    /// of a block is copied as is.
    pub fn add(&mut self, module_out: &[f32]) {
        if self.partial.is_empty() {
            self.partial.extend_from_slice(module_out);
        } else {
            self.partial.iter_mut().zip(module_out).for_each(|(p, &m)| *p += m);
        }
    }

    /// The partial sum of the current block (the value a layer returns), `[n_tokens × hidden]`.
    pub fn partial(&self) -> &[f32] {
        &self.partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPS: f32 = 1e-5;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn before_attention_is_a_plain_copy_until_a_block_closes() {
        // A mix of one source would turn -0.0 into +0.0 (`0.0 + 1.0 · -0.0`); a copy keeps it.
        let embedding = vec![-0.0f32, 2.0, 3.0, -4.0];
        let residuals = Residuals::new(embedding.clone(), 2, EPS);
        let mut out = vec![9.0f32; 4];
        residuals.mix_before_attention(&[0.5, 0.25], &mut out);
        assert_eq!(bits(&out), bits(&embedding));
    }

    #[test]
    fn first_output_of_a_block_is_copied_not_added_to_zero() {
        let mut residuals = Residuals::new(vec![1.0, 2.0], 2, EPS);
        residuals.close_block();
        residuals.add(&[-0.0, 3.0]);
        assert_eq!(bits(residuals.partial()), bits(&[-0.0, 3.0]));
        residuals.add(&[0.5, 0.25]);
        assert_eq!(residuals.partial(), &[0.5, 3.25]);
    }

    #[test]
    fn sources_are_completed_blocks_oldest_first_then_the_partial_sum() {
        let (first, second, partial) = (vec![1.0f32, -2.0], vec![0.5f32, 4.0], vec![-3.0f32, 1.5]);
        let query = [0.7f32, -0.2];
        let mut residuals = Residuals::new(first.clone(), 2, EPS);
        residuals.close_block();
        residuals.add(&second);
        residuals.close_block();
        let mut out = vec![0.0f32; 2];
        let mut want = vec![0.0f32; 2];
        // Right after a boundary the (empty) partial sum is no source.
        residuals.mix_into(&query, &mut out);
        attn_res_batch(&[&first, &second], &query, EPS, 2, &mut want);
        assert_eq!(bits(&out), bits(&want));
        residuals.add(&partial);
        residuals.mix_into(&query, &mut out);
        attn_res_batch(&[&first, &second, &partial], &query, EPS, 2, &mut want);
        assert_eq!(bits(&out), bits(&want));
    }
}
