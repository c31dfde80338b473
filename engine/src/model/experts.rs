//! Where routed experts come from: the seam between the model and expert storage.
//!
//! Owns: the [`ExpertSource`] trait the MoE asks for `(layer, expert)` weights, and
//! [`ResidentExperts`], which binds every routed expert into RAM at load.
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

/// Supplies routed-expert weights on demand.
pub trait ExpertSource: Sync {
    /// Hints that `experts` of `layer_idx` are needed next (batch prefetch as soon as
    /// routing picked them). Must not change any result; sources in RAM ignore it.
    fn prefetch(&self, _layer_idx: usize, _experts: &[usize]) {}

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
    fn prefetch(&self, layer_idx: usize, experts: &[usize]) {
        (**self).prefetch(layer_idx, experts)
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
        gate: b.expert_matrix(layer_idx, expert_idx, ExpertProj::W1, i, l)?,
        up: b.expert_matrix(layer_idx, expert_idx, ExpertProj::W3, i, l)?,
        down: b.expert_matrix(layer_idx, expert_idx, ExpertProj::W2, l, i)?,
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
