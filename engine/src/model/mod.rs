//! The model: typed weights for every layer and the one forward pass.
//!
//! Owns: [`Model::bind`] (validate everything, then read), [`Model::forward`] (a batch of
//! new tokens after whatever the [`SequenceState`] already holds), the Attention Residual
//! wiring of spec §4.2, and the output head.
//! Must not: be duplicated: the CLI, the app and every test reach the model through this
//! forward pass (tests read intermediates through a [`Tap`], never a copy of the code).
//! Easy to break: `prefix` (not the AttnRes output) is what flows to the next layer; at a
//! boundary it becomes a snapshot and is cleared; AttnRes before attention is skipped
//! only while no snapshot exists (layer 0).

pub mod attn_res;
pub mod bind;
pub mod experts;
pub mod kda;
pub mod matrix;
pub mod mla;
pub mod moe;
pub mod names;
pub mod softmax;
mod state;
mod tap;
pub mod trunk;

pub use state::SequenceState;
pub use tap::{LayerTap, Tap};

use crate::config::{LayerKind, ModelConfig};
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::format::TensorIndex;
use crate::kernels::rmsnorm;
use attn_res::{attn_res_batch, fold};
use bind::Binder;
use experts::{ExpertSource, ResidentExperts};
use kda::{kda_forward, KdaWeights};
use matrix::Matrix;
use mla::{mla_forward, MlaWeights};
use moe::{moe_forward, GluMlp, MoeWeights};
use trunk::{ResidentTrunk, TrunkSource};

/// A layer's token mixer.
enum Mixer {
    Kda(Box<KdaWeights>),
    Mla(Box<MlaWeights>),
}

/// A layer's channel mixer.
enum Ffn {
    Dense(Box<GluMlp>),
    Moe(Box<MoeWeights>),
}

/// One decoder layer's trunk weights.
pub struct Layer {
    input_norm: Vec<f32>,
    post_attn_norm: Vec<f32>,
    /// Folded AttnRes query before attention, `[E]`.
    attn_res_attn: Vec<f32>,
    /// Folded AttnRes query before the MLP, `[E]`.
    attn_res_mlp: Vec<f32>,
    mixer: Mixer,
    ffn: Ffn,
}

/// The whole bound model.
pub struct Model {
    cfg: ModelConfig,
    /// `[vocab, E]`.
    embed: Matrix,
    /// `[vocab, E]`.
    lm_head: Matrix,
    final_norm: Vec<f32>,
    out_attn_res: Vec<f32>,
    trunk: Box<dyn TrunkSource>,
    experts: Box<dyn ExpertSource + Send>,
}

/// Which positions of a forward pass need logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitsFor {
    /// Only the last new token (generation).
    Last,
    /// Every new token (teacher forcing, scoring).
    All,
    /// None: the pass only extends the state (a prefill chunk before the last).
    None,
}

impl Model {
    /// Validates every tensor (routed experts included) against `cfg`, then binds the
    /// model-level tensors. Trunk layers come from `trunk` (all read into RAM when `None`);
    /// routed experts from `experts` (all read into RAM when `None`).
    pub fn bind(
        cfg: ModelConfig,
        index: &TensorIndex,
        trunk: Option<Box<dyn TrunkSource>>,
        experts: Option<Box<dyn ExpertSource + Send>>,
    ) -> Result<Model> {
        let validate = Binder::new(index, false);
        let checked = ResidentTrunk::bind(&validate, &cfg)?;
        Self::bind_with(&cfg, &validate, Box::new(checked), Box::new(ResidentExperts::bind(&validate, &cfg)?))?;
        let read = Binder::new(index, true);
        let trunk = match trunk {
            Some(source) => source,
            None => Box::new(ResidentTrunk::bind(&read, &cfg)?),
        };
        let experts = match experts {
            Some(source) => source,
            None => Box::new(ResidentExperts::bind(&read, &cfg)?),
        };
        Self::bind_with(&cfg, &read, trunk, experts)
    }

    fn bind_with(
        cfg: &ModelConfig,
        b: &Binder,
        trunk: Box<dyn TrunkSource>,
        experts: Box<dyn ExpertSource + Send>,
    ) -> Result<Model> {
        let (e, v) = (cfg.hidden_size, cfg.vocab_size);
        Ok(Model {
            cfg: cfg.clone(),
            embed: b.matrix(&names::embed_tokens(), v, e)?,
            lm_head: b.matrix(&names::lm_head(), v, e)?,
            final_norm: b.vector(&names::final_norm(), e)?,
            out_attn_res: fold(
                &b.vector(&names::output_attn_res_norm(), e)?,
                &b.attn_res_proj(&names::output_attn_res_proj(), e)?,
            ),
            trunk,
            experts,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Replaces where trunk layers come from (between forward passes; the engine's replan).
    /// The new source must serve the same checkpoint's layers.
    pub fn set_trunk(&mut self, trunk: Box<dyn TrunkSource>) {
        self.trunk = trunk;
    }

    /// Replaces where routed experts come from (between forward passes; the engine's replan).
    pub fn set_experts(&mut self, experts: Box<dyn ExpertSource + Send>) {
        self.experts = experts;
    }

    /// Runs `tokens` after the positions `state` already holds, updating `state`.
    /// Returns logits `[k][vocab]` for the positions `want` selects.
    pub fn forward(
        &self,
        tokens: &[u32],
        state: &mut SequenceState,
        want: LogitsFor,
        cancel: &CancelToken,
        tap: Option<&mut (dyn Tap + Send)>,
    ) -> Result<Option<Vec<f32>>> {
        if tokens.is_empty() {
            return Err(Error::Empty { what: "token batch" });
        }
        let (e, n) = (self.cfg.hidden_size, tokens.len());
        let mut prefix = vec![0.0f32; n * e];
        for (t, &id) in tokens.iter().enumerate() {
            if id as usize >= self.cfg.vocab_size {
                return Err(Error::TokenId { id, vocab_size: self.cfg.vocab_size });
            }
            self.embed.row_f32(id as usize, &mut prefix[t * e..(t + 1) * e]);
        }
        let mut tap = tap;
        let mut blocks: Vec<Vec<f32>> = Vec::new();
        // `None` between a boundary snapshot and the first module output of the block.
        let mut prefix = Some(prefix);
        let mut h = vec![0.0f32; n * e];
        let mut x = vec![0.0f32; n * e];
        for layer_idx in 0..self.cfg.n_layers {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let layer = self.trunk.layer(layer_idx)?;
            let current = prefix.take().unwrap_or_default();
            if blocks.is_empty() {
                h.copy_from_slice(&current);
            } else {
                self.mix_sources(&blocks, Some(&current), &layer.attn_res_attn, &mut h);
            }
            let running = if self.cfg.is_block_boundary(layer_idx) {
                blocks.push(current);
                None
            } else {
                Some(current)
            };
            self.norm_rows(&h, &layer.input_norm, &mut x);
            let mut a = vec![0.0f32; n * e];
            match &layer.mixer {
                Mixer::Kda(w) => kda_forward(w, &self.cfg, &x, state.kda_mut(layer_idx), &mut a),
                Mixer::Mla(w) => mla_forward(w, &self.cfg, &x, state.mla_mut(layer_idx), &mut a),
            }
            let mut run = match running {
                None => a.clone(),
                Some(mut p) => {
                    p.iter_mut().zip(&a).for_each(|(pi, &ai)| *pi += ai);
                    p
                }
            };
            self.mix_sources(&blocks, Some(&run), &layer.attn_res_mlp, &mut h);
            self.norm_rows(&h, &layer.post_attn_norm, &mut x);
            let mut m = vec![0.0f32; n * e];
            match &layer.ffn {
                Ffn::Dense(w) => w.forward(&self.cfg, &x, &mut m),
                Ffn::Moe(w) => {
                    moe_forward(w, &self.cfg, layer_idx, self.experts.as_ref(), &x, &mut m)?;
                }
            }
            run.iter_mut().zip(&m).for_each(|(pi, &mi)| *pi += mi);
            if let Some(t) = tap.as_deref_mut() {
                t.layer(&LayerTap { layer_idx, n_tokens: n, attn_out: &a, mlp_out: &m, prefix: &run });
            }
            prefix = Some(run);
        }
        if cancel.is_cancelled() {
            return Ok(None);
        }
        state.advance(n);
        let last = prefix.unwrap_or_default();
        self.mix_sources(&blocks, Some(&last), &self.out_attn_res, &mut h);
        self.norm_rows(&h, &self.final_norm, &mut x);
        if let Some(t) = tap {
            t.final_hidden(&x);
        }
        let rows = match want {
            LogitsFor::All => &x[..],
            LogitsFor::Last => &x[(n - 1) * e..],
            LogitsFor::None => &x[..0],
        };
        let mut logits = vec![0.0f32; rows.len() / e * self.cfg.vocab_size];
        self.lm_head.matmul(rows, &mut logits);
        Ok(Some(logits))
    }

    /// AttnRes over `blocks ++ [current]` for every token.
    fn mix_sources(&self, blocks: &[Vec<f32>], current: Option<&Vec<f32>>, f: &[f32], out: &mut [f32]) {
        let sources: Vec<&[f32]> = blocks.iter().map(Vec::as_slice).chain(current.map(Vec::as_slice)).collect();
        attn_res_batch(&sources, f, self.cfg.rms_norm_eps, self.cfg.hidden_size, out);
    }

    fn norm_rows(&self, src: &[f32], w: &[f32], dst: &mut [f32]) {
        let e = self.cfg.hidden_size;
        for (s, d) in src.chunks(e).zip(dst.chunks_mut(e)) {
            rmsnorm(s, w, self.cfg.rms_norm_eps, d);
        }
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
        input_norm: b.vector(&n(names::INPUT_NORM), e)?,
        post_attn_norm: b.vector(&n(names::POST_ATTN_NORM), e)?,
        attn_res_attn: fold(&b.vector(&n(names::ATTN_RES_NORM), e)?, &b.attn_res_proj(&n(names::ATTN_RES_PROJ), e)?),
        attn_res_mlp: fold(&b.vector(&n(names::MLP_RES_NORM), e)?, &b.attn_res_proj(&n(names::MLP_RES_PROJ), e)?),
        mixer,
        ffn,
    })
}
