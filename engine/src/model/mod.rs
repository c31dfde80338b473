//! The model: the bound weights and the one forward pass.
//!
//! Owns: [`Model::bind`] (validate everything, then read) and [`Model::forward_batch`] (new
//! tokens of one or several sequences, each after whatever its [`SequenceState`] already
//! holds; [`Model::forward`] is the one-sequence case): the embedding, the loop
//! over [`Layer::forward`] (the steps of one layer are in `layer.rs`; the Attention
//! Residual sums in [`attn_res::Residuals`]), the taps, and the output head (spec §4.7).
//! Must not: be duplicated: the CLI, the app and every test reach the model through this
//! forward pass (tests read intermediates through a [`Tap`], never a copy of the code).
//! Easy to break: the value a layer hands on (and taps as `prefix`) is the partial sum of
//! [`attn_res::Residuals`], not the AttnRes output; the head mixes every snapshot and the
//! last partial sum, so the residuals must live across the whole layer loop.

pub mod attn_res;
pub mod batch;
pub mod bind;
pub mod experts;
pub mod kda;
mod layer;
pub mod matrix;
pub mod mla;
pub mod mlp;
pub mod moe;
pub mod names;
pub mod softmax;
mod state;
mod tap;
pub mod trunk;
pub mod vocab;
pub mod weight;

pub(crate) use layer::bind_layer;
pub use layer::{Layer, Scratch};
pub use state::SequenceState;
pub use tap::{LayerTap, Tap};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::format::TensorIndex;
use attn_res::{fold, Residuals};
use batch::SeqRows;
use bind::Binder;
use experts::{ExpertSource, ResidentExperts};
use layer::norm_rows;
use trunk::{ResidentTrunk, TrunkSource};
use vocab::{Embedding, EmbeddingReader, HeadReader, OutputHead, TensorRows};

pub use k3_plan::VocabPlacement;

/// The whole bound model.
pub struct Model {
    cfg: ModelConfig,
    /// `[vocab, E]`, held or read a row at a time.
    embed: Embedding,
    /// `[vocab, E]`, held or read in chunks of rows.
    lm_head: OutputHead,
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
        Self::validate(&cfg, index)?;
        Self::bind_validated(cfg, index, trunk, experts, VocabShape::held())
    }

    /// Checks every tensor (routed experts included) against `cfg` without reading any
    /// data: names, dtypes, shapes, the first failure named.
    pub fn validate(cfg: &ModelConfig, index: &TensorIndex) -> Result<()> {
        let validate = Binder::new(index, false);
        let checked = ResidentTrunk::bind(&validate, cfg)?;
        let experts = Box::new(ResidentExperts::bind(&validate, cfg)?);
        let vocab = bind_vocab(cfg, &validate, index, &VocabShape::held())?;
        Self::bind_with(cfg, &validate, Box::new(checked), experts, vocab)?;
        Ok(())
    }

    /// [`Model::bind`] after [`Model::validate`] succeeded: reads the model-level tensors
    /// (the embeddings and head as `vocab` places them), and the trunk and experts when no
    /// source is given.
    pub fn bind_validated(
        cfg: ModelConfig,
        index: &TensorIndex,
        trunk: Option<Box<dyn TrunkSource>>,
        experts: Option<Box<dyn ExpertSource + Send>>,
        vocab: VocabShape,
    ) -> Result<Model> {
        let read = Binder::new(index, true);
        let trunk = match trunk {
            Some(source) => source,
            None => Box::new(ResidentTrunk::bind(&read, &cfg)?),
        };
        let experts = match experts {
            Some(source) => source,
            None => Box::new(ResidentExperts::bind(&read, &cfg)?),
        };
        let (embed, lm_head) = bind_vocab(&cfg, &read, index, &vocab)?;
        Self::bind_with(&cfg, &read, trunk, experts, (embed, lm_head))
    }

    fn bind_with(
        cfg: &ModelConfig,
        b: &Binder,
        trunk: Box<dyn TrunkSource>,
        experts: Box<dyn ExpertSource + Send>,
        (embed, lm_head): (Embedding, OutputHead),
    ) -> Result<Model> {
        let e = cfg.hidden_size;
        Ok(Model {
            cfg: cfg.clone(),
            embed,
            lm_head,
            final_norm: b.vector(&names::final_norm(), e)?,
            out_attn_res: fold(
                &b.vector(&names::output_attn_res_norm(), e)?,
                &b.attn_res_proj(&names::output_attn_res_proj(), e)?,
            ),
            trunk,
            experts,
        })
    }

    /// Moves the embeddings and head to `vocab`'s placement (a replan): the new one is
    /// bound (read, when held) before the old one is dropped.
    pub fn place_vocab(&mut self, index: &TensorIndex, vocab: &VocabShape) -> Result<()> {
        let (embed, lm_head) = bind_vocab(&self.cfg, &Binder::new(index, true), index, vocab)?;
        self.embed = embed;
        self.lm_head = lm_head;
        Ok(())
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
    /// Returns logits `[k][vocab]` for the positions `want` selects, or `None` when
    /// `cancel` was set: between layers, between routed experts, or while a streamed read
    /// waited (its `Error::Stopped` ends here; the caller rebuilds `state`).
    pub fn forward(
        &self,
        tokens: &[u32],
        state: &mut SequenceState,
        want: LogitsFor,
        cancel: &CancelToken,
        tap: Option<&mut (dyn Tap + Send)>,
    ) -> Result<Option<Vec<f32>>> {
        let mut one = [SequenceInput { tokens, state, want }];
        Ok(self.forward_batch(&mut one, cancel, tap)?.and_then(|logits| logits.into_iter().next()))
    }

    /// [`Model::forward`] for several sequences in one pass: each sequence's tokens run after
    /// what its own state holds and extend only it; every trunk weight is applied to all
    /// rows at once and each routed expert once to every row that chose it. Returns each
    /// sequence's logits (as its `want` selects), in order, or `None` when cancelled (every
    /// state is then to be rebuilt). A sequence's numbers are the same whatever else is in
    /// the batch. `tap` sees the whole batch's rows.
    pub fn forward_batch(
        &self,
        seqs: &mut [SequenceInput<'_>],
        cancel: &CancelToken,
        tap: Option<&mut (dyn Tap + Send)>,
    ) -> Result<Option<Vec<Vec<f32>>>> {
        match self.forward_until(seqs, cancel, tap) {
            Err(Error::Stopped) => Ok(None),
            other => other,
        }
    }

    /// [`Model::forward_batch`] with a stop inside a streamed read still an `Error::Stopped`.
    fn forward_until(
        &self,
        seqs: &mut [SequenceInput<'_>],
        cancel: &CancelToken,
        mut tap: Option<&mut (dyn Tap + Send)>,
    ) -> Result<Option<Vec<Vec<f32>>>> {
        if seqs.is_empty() || seqs.iter().any(|s| s.tokens.is_empty()) {
            return Err(Error::Empty { what: "token batch" });
        }
        let e = self.cfg.hidden_size;
        let mut tokens = Vec::new();
        let mut rows = Vec::with_capacity(seqs.len());
        for s in seqs.iter() {
            let start = tokens.len();
            tokens.extend_from_slice(s.tokens);
            rows.push(start..tokens.len());
        }
        let n_tokens = tokens.len();
        // The embedding is the first partial sum; no block is complete yet.
        let mut residuals = Residuals::new(self.embed_tokens(&tokens)?, e, self.cfg.rms_norm_eps);
        // Work buffers `[n_tokens × hidden]`, shared by every layer and the head.
        let mut scratch = Scratch::new(n_tokens, e);
        let mut memory: Vec<SeqRows<'_, SequenceState>> =
            seqs.iter_mut().zip(&rows).map(|(s, r)| SeqRows { memory: &mut *s.state, rows: r.clone() }).collect();
        for layer_idx in 0..self.cfg.n_layers {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            // The trunk hands out one layer at a time; it is dropped before the next.
            let layer = self.trunk.layer(layer_idx, cancel)?;
            // One decoder layer: its attention and MLP outputs join the partial sum.
            layer.forward(&self.cfg, (self.experts.as_ref(), cancel), &mut memory, &mut residuals, &mut scratch)?;
            // Observers see both module outputs and the partial sum the layer hands on.
            if let Some(t) = tap.as_deref_mut() {
                let (attn_out, mlp_out, prefix) = (&scratch.attn_out, &scratch.mlp_out, residuals.partial());
                t.layer(&LayerTap { layer_idx, n_tokens, attn_out, mlp_out, prefix });
            }
        }
        drop(memory);
        if cancel.is_cancelled() {
            return Ok(None);
        }
        // Each sequence's rows whose logits it wants, and its first new position.
        let picked: Vec<(usize, Vec<usize>)> = seqs
            .iter_mut()
            .zip(&rows)
            .map(|(s, r)| {
                let first_position = s.state.n_positions();
                s.state.advance(s.tokens.len());
                let wanted = match s.want {
                    LogitsFor::All => r.clone().collect(),
                    LogitsFor::Last => vec![r.end - 1],
                    LogitsFor::None => vec![],
                };
                (first_position, wanted)
            })
            .collect();
        // Model-level AttnRes, final norm, lm_head.
        let all_rows: Vec<usize> = picked.iter().flat_map(|(_, w)| w.iter().copied()).collect();
        let logits = self.head(&residuals, &mut scratch, &all_rows, tap)?;
        let vocab = self.cfg.vocab_size;
        let mut out = Vec::with_capacity(seqs.len());
        let mut at = 0;
        for ((first_position, wanted), r) in picked.iter().zip(&rows) {
            let own = &logits[at * vocab..(at + wanted.len()) * vocab];
            at += wanted.len();
            // Nothing non-finite is ever sampled from: NaN or ±inf logits are an error.
            if let Some(i) = own.iter().position(|v| !v.is_finite()) {
                let position = first_position + wanted[i / vocab] - r.start;
                return Err(Error::NonFiniteLogits { position, value: own[i] });
            }
            out.push(own.to_vec());
        }
        Ok(Some(out))
    }

    /// Embedding rows of `tokens` widened to f32, `[n_tokens × hidden]`.
    fn embed_tokens(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        if tokens.is_empty() {
            return Err(Error::Empty { what: "token batch" });
        }
        let e = self.cfg.hidden_size;
        let mut rows = vec![0.0f32; tokens.len() * e];
        for (row, &id) in rows.chunks_mut(e).zip(tokens) {
            if id as usize >= self.cfg.vocab_size {
                return Err(Error::TokenId { id, vocab_size: self.cfg.vocab_size });
            }
            self.embed.row_f32(id as usize, row)?;
        }
        Ok(rows)
    }

    /// The output head (spec §4.7): model-level AttnRes over every snapshot and the last
    /// partial sum, the final norm (tapped as `final_hidden`), then `lm_head` on the rows
    /// `picked` names, in that order. Returns logits `[picked.len() × vocab]`.
    fn head(
        &self,
        residuals: &Residuals,
        scratch: &mut Scratch,
        picked: &[usize],
        tap: Option<&mut (dyn Tap + Send)>,
    ) -> Result<Vec<f32>> {
        let e = self.cfg.hidden_size;
        residuals.mix_into(&self.out_attn_res, &mut scratch.mixed);
        norm_rows(&scratch.mixed, &self.final_norm, self.cfg.rms_norm_eps, e, &mut scratch.normed);
        if let Some(t) = tap {
            t.final_hidden(&scratch.normed);
        }
        let x = &scratch.normed;
        let rows: Vec<f32> = picked.iter().flat_map(|&r| x[r * e..(r + 1) * e].iter().copied()).collect();
        let mut logits = vec![0.0f32; picked.len() * self.cfg.vocab_size];
        self.lm_head.logits(&rows, &mut logits)?;
        Ok(logits)
    }
}

/// One sequence's part of [`Model::forward_batch`]: its new tokens, the state they
/// extend, and which of their logits it wants.
pub struct SequenceInput<'a> {
    pub tokens: &'a [u32],
    pub state: &'a mut SequenceState,
    pub want: LogitsFor,
}

/// How the embeddings and head are placed: the plan's choice, with the sizes it counted,
/// and the counter their reads add to.
#[derive(Debug, Clone)]
pub struct VocabShape {
    pub placement: VocabPlacement,
    /// Embedding rows kept once read ([`VocabPlacement::Read`]).
    pub embedding_cache_rows: usize,
    /// Head rows read and multiplied at once ([`VocabPlacement::Read`]).
    pub head_chunk_rows: usize,
    /// Bytes read from the shards ([`VocabPlacement::Read`]).
    pub bytes_read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl VocabShape {
    /// Both tensors in RAM.
    pub fn held() -> VocabShape {
        VocabShape {
            placement: VocabPlacement::Held,
            embedding_cache_rows: 0,
            head_chunk_rows: 0,
            bytes_read: Default::default(),
        }
    }

    /// What `plan` decided for the model of `fp`, its reads counted in `bytes_read`.
    pub fn of_plan(
        plan: &k3_plan::MemoryPlan,
        fp: &k3_plan::Footprint,
        bytes_read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) -> VocabShape {
        VocabShape {
            placement: plan.vocab,
            embedding_cache_rows: k3_plan::EMBEDDING_CACHE_ROWS as usize,
            head_chunk_rows: k3_plan::vocab::head_chunk_rows(fp) as usize,
            bytes_read,
        }
    }
}

/// The embedding table and the head as `vocab` places them: bound through `b` when held
/// (read, or only checked by a validating binder), opened for reads in `index` when read.
fn bind_vocab(
    cfg: &ModelConfig,
    b: &Binder,
    index: &TensorIndex,
    vocab: &VocabShape,
) -> Result<(Embedding, OutputHead)> {
    let (e, v) = (cfg.hidden_size, cfg.vocab_size);
    match vocab.placement {
        VocabPlacement::Held => Ok((
            Embedding::Held(b.matrix(&names::embed_tokens(), v, e)?),
            OutputHead::Held(b.matrix(&names::lm_head(), v, e)?),
        )),
        VocabPlacement::Read => {
            let rows = |name: String| match index.get(&name) {
                Some(info) => TensorRows::open(index, info, (v, e), vocab.bytes_read.clone()),
                None => Err(Error::MissingTensor { name }),
            };
            Ok((
                Embedding::Read(EmbeddingReader::new(rows(names::embed_tokens())?, vocab.embedding_cache_rows)),
                OutputHead::Read(HeadReader::new(rows(names::lm_head())?, vocab.head_chunk_rows)),
            ))
        }
    }
}
