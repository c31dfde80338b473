//! Named-intermediate hook: lets tests and debugging read what each layer computed
//! without a second copy of the forward pass.
//!
//! Must not: change any value; taps observe only.

/// One layer's outputs for a batch of tokens, each `[n_tokens][E]`.
pub struct LayerTap<'a> {
    pub layer_idx: usize,
    pub n_tokens: usize,
    /// The attention module output `a`.
    pub attn_out: &'a [f32],
    /// The FFN / MoE output `m`.
    pub mlp_out: &'a [f32],
    /// The running `prefix` the layer returns.
    pub prefix: &'a [f32],
}

/// Receives intermediates from [`crate::model::Model::forward`].
pub trait Tap {
    fn layer(&mut self, tap: &LayerTap<'_>);
    /// The normalised input of `lm_head`, `[n_tokens][E]`.
    fn final_hidden(&mut self, x: &[f32]);
}
