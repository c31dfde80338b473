//! Where routed experts come from: the seam between the model and expert storage.
//!
//! Owns: the [`ExpertSource`] trait the MoE asks for `(layer, expert)` weights (and, for a
//! streamed source, which of a layer's experts is ready first), and [`ResidentExperts`],
//! which binds every routed expert into RAM at load.
//! Must not: return a substitute or skip an expert: a failed load is an error for the
//! whole generation (spec §4.6).
//! Easy to break: the streaming cache (`stream::ExpertCache`) implements the same trait;
//! the model must not assume the weights stay alive beyond the returned `Arc`.

use std::sync::Arc;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::model::bind::Binder;
use crate::model::mlp::GluMlp;
use crate::model::names::ExpertProj;

/// One expert routing chose for a layer, and how many token uses it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    pub expert_idx: usize,
    pub uses: usize,
}

/// Supplies routed-expert weights on demand.
pub trait ExpertSource: Sync {
    /// Tells the source which experts of `layer_idx` routing chose, in first-use order
    /// (batch prefetch as soon as routing picked them; a recorded trace lists them here,
    /// in this order). Must not change any result; sources in RAM ignore it.
    fn prefetch(&self, _layer_idx: usize, _wanted: &[Demand]) {}

    /// Of `pending` (experts of `layer_idx` not yet computed, non-empty), the index of one
    /// to compute next: a streamed source answers with one already in RAM, or one it is
    /// not reading yet, and waits only while every one is still arriving (giving up with
    /// `Error::Stopped` soon after `stop` is set). Sources in RAM answer 0. The answer
    /// changes only the order experts are computed in, never a result.
    fn next_ready(&self, _layer_idx: usize, _pending: &[usize], _stop: &CancelToken) -> Result<usize> {
        Ok(0)
    }

    /// The MLP of expert `expert_idx` of MoE layer `layer_idx`, in latent space:
    /// gate/up `[I, L]`, down `[L, I]`. A streamed source gives up with `Error::Stopped`
    /// soon after `stop` is set rather than finish reading it.
    fn expert(&self, layer_idx: usize, expert_idx: usize, stop: &CancelToken) -> Result<Arc<GluMlp>>;

    /// Like [`ExpertSource::expert`], for `n_uses` token uses served by one fetch (the
    /// counters and traces count every use).
    fn expert_uses(
        &self,
        layer_idx: usize,
        expert_idx: usize,
        _n_uses: usize,
        stop: &CancelToken,
    ) -> Result<Arc<GluMlp>> {
        self.expert(layer_idx, expert_idx, stop)
    }
}

/// A source the engine also keeps a handle to (to resize the cache between generations).
impl<T: ExpertSource + Send + Sync + ?Sized> ExpertSource for Arc<T> {
    fn prefetch(&self, layer_idx: usize, wanted: &[Demand]) {
        (**self).prefetch(layer_idx, wanted)
    }
    fn next_ready(&self, layer_idx: usize, pending: &[usize], stop: &CancelToken) -> Result<usize> {
        (**self).next_ready(layer_idx, pending, stop)
    }
    fn expert(&self, layer_idx: usize, expert_idx: usize, stop: &CancelToken) -> Result<Arc<GluMlp>> {
        (**self).expert(layer_idx, expert_idx, stop)
    }
    fn expert_uses(
        &self,
        layer_idx: usize,
        expert_idx: usize,
        n_uses: usize,
        stop: &CancelToken,
    ) -> Result<Arc<GluMlp>> {
        (**self).expert_uses(layer_idx, expert_idx, n_uses, stop)
    }
}

/// Binds one routed expert (MXFP4 pair or unquantised tensors).
pub fn bind_expert(b: &Binder, cfg: &ModelConfig, layer_idx: usize, expert_idx: usize) -> Result<GluMlp> {
    let (l, i) = (cfg.moe.latent_dim, cfg.moe.expert_intermediate);
    Ok(GluMlp {
        gate: b.expert_matrix(layer_idx, expert_idx, ExpertProj::W1, i, l)?.into(),
        up: b.expert_matrix(layer_idx, expert_idx, ExpertProj::W3, i, l)?.into(),
        down: b.expert_matrix(layer_idx, expert_idx, ExpertProj::W2, l, i)?.into(),
    })
}

/// Every routed expert of every MoE layer, held in RAM (small models and tests).
pub struct ResidentExperts {
    /// `[layer][expert]`; empty for dense layers.
    layers: Vec<Vec<Arc<GluMlp>>>,
}

impl ResidentExperts {
    pub fn bind(b: &Binder, cfg: &ModelConfig) -> Result<Self> {
        let mut layers = Vec::with_capacity(cfg.n_layers);
        for layer_idx in 0..cfg.n_layers {
            let mut experts = Vec::new();
            if !cfg.is_dense(layer_idx) {
                for e in 0..cfg.moe.n_experts {
                    experts.push(Arc::new(bind_expert(b, cfg, layer_idx, e)?));
                }
            }
            layers.push(experts);
        }
        Ok(ResidentExperts { layers })
    }
}

impl ExpertSource for ResidentExperts {
    fn expert(&self, layer_idx: usize, expert_idx: usize, _stop: &CancelToken) -> Result<Arc<GluMlp>> {
        self.layers
            .get(layer_idx)
            .and_then(|l| l.get(expert_idx))
            .cloned()
            .ok_or(Error::Expert { name: format!("layer {layer_idx} expert {expert_idx}"), reason: "not bound".into() })
    }
}
