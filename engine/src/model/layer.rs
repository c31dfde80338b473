//! One decoder layer (spec §4.2): its trunk weights, their binding, and [`Layer::forward`].
//!
//! Owns: the order of one layer's steps — AttnRes before attention, the block boundary,
//! input norm, token mixer (KDA or MLA), AttnRes before the MLP, post-attention norm,
//! channel mixer (dense or MoE) — and the named work buffers ([`Scratch`]) they share.
//! Must not: keep anything between forward calls (per-sequence memory is in
//! [`SequenceState`]; the Attention Residual sums are rebuilt per call in [`Residuals`]),
//! or observe intermediates itself (the caller taps [`Scratch`] after each layer).
//! Easy to break: the boundary snapshot is taken AFTER the AttnRes before attention read
//! the running partial sum and BEFORE the attention output is added to it; the value that
//! flows to the next layer is the partial sum, not the AttnRes output `mixed`.

use crate::config::{LayerKind, ModelConfig};
use crate::error::Result;
use crate::events::CancelToken;
use crate::kernels::rmsnorm;
use crate::model::attn_res::{fold, Residuals};
use crate::model::batch::SeqRows;
use crate::model::bind::Binder;
use crate::model::experts::ExpertSource;
use crate::model::kda::KdaWeights;
use crate::model::mla::MlaWeights;
use crate::model::mlp::GluMlp;
use crate::model::moe::MoeWeights;
use crate::model::names;
use crate::model::state::SequenceState;

/// A layer's token mixer.
enum Mixer {
    Kda(Box<KdaWeights>),
    Mla(Box<MlaWeights>),
}

impl Mixer {
    /// Mixes `xs` (`[rows × hidden]`, input-normed) across positions into `out`
    /// (`[rows × hidden]`), each sequence of `seqs` over its own rows, extending its slot of
    /// this layer; a piece read stopped by `stop`, or failed, is the error.
    fn forward(
        &self,
        cfg: &ModelConfig,
        layer_idx: usize,
        (xs, stop): (&[f32], &CancelToken),
        seqs: &mut [SeqRows<'_, SequenceState>],
        out: &mut [f32],
    ) -> Result<()> {
        match self {
            Mixer::Kda(w) => {
                let mut slots: Vec<_> = seqs.iter_mut().map(|s| s.with(|m| m.kda_mut(layer_idx))).collect();
                w.forward_batch(cfg, xs, &mut slots, out, stop)
            }
            Mixer::Mla(w) => {
                let mut slots: Vec<_> = seqs.iter_mut().map(|s| s.with(|m| m.mla_mut(layer_idx))).collect();
                w.forward_batch(cfg, xs, &mut slots, out, stop)
            }
        }
    }
}

/// A layer's channel mixer.
enum Ffn {
    Dense(Box<GluMlp>),
    Moe(Box<MoeWeights>),
}

impl Ffn {
    /// Applies the FFN to `xs` (`[n_tokens × hidden]`, post-attention-normed) → `out`
    /// (`[n_tokens × hidden]`); MoE layers fetch their routed experts from `experts`
    /// until `stop` is set.
    fn forward(
        &self,
        cfg: &ModelConfig,
        layer_idx: usize,
        fetch: (&dyn ExpertSource, &CancelToken),
        xs: &[f32],
        out: &mut [f32],
    ) -> Result<()> {
        match self {
            Ffn::Dense(w) => w.forward(cfg, xs, out, fetch.1)?,
            Ffn::Moe(w) => {
                w.forward(cfg, layer_idx, fetch, xs, out)?;
            }
        }
        Ok(())
    }
}

/// One decoder layer's trunk weights.
pub struct Layer {
    layer_idx: usize,
    /// `[E]`.
    input_norm: Vec<f32>,
    /// `[E]`.
    post_attn_norm: Vec<f32>,
    /// Folded AttnRes query before attention, `[E]`.
    attn_res_attn: Vec<f32>,
    /// Folded AttnRes query before the MLP, `[E]`.
    attn_res_mlp: Vec<f32>,
    mixer: Mixer,
    ffn: Ffn,
}

/// One forward call's work buffers, each `[n_tokens × hidden]`, reused by every layer.
pub struct Scratch {
    /// The AttnRes output `h` (the input of a norm).
    pub mixed: Vec<f32>,
    /// The normed input `x` of a mixer, an FFN or `lm_head`.
    pub normed: Vec<f32>,
    /// The token mixer's output `a`.
    pub attn_out: Vec<f32>,
    /// The channel mixer's output `m`.
    pub mlp_out: Vec<f32>,
}

impl Scratch {
    pub fn new(n_tokens: usize, hidden: usize) -> Self {
        let buffer = || vec![0.0f32; n_tokens * hidden];
        Scratch { mixed: buffer(), normed: buffer(), attn_out: buffer(), mlp_out: buffer() }
    }
}

impl Layer {
    /// Runs this layer on every row of the batch: reads and extends `residuals`, uses
    /// `scratch` (on return `attn_out` and `mlp_out` hold this layer's module outputs),
    /// and extends this layer's slot of each sequence of `seqs` by its rows. Routed experts
    /// come from `fetch.0`, which gives up with `Error::Stopped` once `fetch.1` is set.
    pub fn forward(
        &self,
        cfg: &ModelConfig,
        fetch: (&dyn ExpertSource, &CancelToken),
        seqs: &mut [SeqRows<'_, SequenceState>],
        residuals: &mut Residuals,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let (eps, e) = (cfg.rms_norm_eps, cfg.hidden_size);
        // AttnRes before attention: completed blocks and the running partial sum are mixed
        // into `mixed` (a plain copy of the partial sum while no block exists, layer 0).
        residuals.mix_before_attention(&self.attn_res_attn, &mut scratch.mixed);
        // A block boundary: the partial sum becomes a snapshot and the new block starts empty.
        if cfg.is_block_boundary(self.layer_idx) {
            residuals.close_block();
        }
        // Token mixer (KDA or MLA) on the input-normed mix; its output joins the partial sum.
        norm_rows(&scratch.mixed, &self.input_norm, eps, e, &mut scratch.normed);
        self.mixer.forward(cfg, self.layer_idx, (&scratch.normed, fetch.1), seqs, &mut scratch.attn_out)?;
        residuals.add(&scratch.attn_out);
        // AttnRes before the MLP: always mixed (layer 0 has already closed a block).
        residuals.mix_into(&self.attn_res_mlp, &mut scratch.mixed);
        // Channel mixer (dense or MoE) on the post-attention-normed mix; its output joins too.
        norm_rows(&scratch.mixed, &self.post_attn_norm, eps, e, &mut scratch.normed);
        self.ffn.forward(cfg, self.layer_idx, fetch, &scratch.normed, &mut scratch.mlp_out)?;
        residuals.add(&scratch.mlp_out);
        Ok(())
    }
}

/// RMSNorm of every `hidden`-wide row of `src` (`[n_tokens × hidden]`) with gain `w` → `dst`.
pub(crate) fn norm_rows(src: &[f32], w: &[f32], eps: f32, hidden: usize, dst: &mut [f32]) {
    for (s, d) in src.chunks(hidden).zip(dst.chunks_mut(hidden)) {
        rmsnorm(s, w, eps, d);
    }
}

/// Binds one decoder layer's trunk tensors.
pub(crate) fn bind_layer(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Layer> {
    let e = cfg.hidden_size;
    let n = |s: &str| names::layer(layer_idx, s);
    let mixer = match cfg.layer_kinds[layer_idx] {
        LayerKind::Kda => Mixer::Kda(Box::new(KdaWeights::bind(b, cfg, layer_idx)?)),
        LayerKind::Mla => Mixer::Mla(Box::new(MlaWeights::bind(b, cfg, layer_idx)?)),
    };
    let ffn = if cfg.is_dense(layer_idx) {
        Ffn::Dense(Box::new(GluMlp::bind_dense(b, cfg, layer_idx)?))
    } else {
        Ffn::Moe(Box::new(MoeWeights::bind(b, cfg, layer_idx)?))
    };
    Ok(Layer {
        layer_idx,
        input_norm: b.vector(&n(names::INPUT_NORM), e)?,
        post_attn_norm: b.vector(&n(names::POST_ATTN_NORM), e)?,
        attn_res_attn: fold(&b.vector(&n(names::ATTN_RES_NORM), e)?, &b.attn_res_proj(&n(names::ATTN_RES_PROJ), e)?),
        attn_res_mlp: fold(&b.vector(&n(names::MLP_RES_NORM), e)?, &b.attn_res_proj(&n(names::MLP_RES_PROJ), e)?),
        mixer,
        ffn,
    })
}
