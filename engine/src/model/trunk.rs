//! Where trunk layers come from: the seam between the forward pass and trunk storage.
//!
//! Owns: the [`TrunkSource`] trait the forward pass asks for layer `ℓ` (in order 0..n for
//! every pass), and [`ResidentTrunk`], every layer bound into RAM at load.
//! Must not: hand out a layer whose bytes are not fully read; the streamed trunk
//! (`stream::trunk_stream`) implements the same trait.
//! Easy to break: the forward pass drops a layer before asking for the next, so a
//! one-slot ring can reuse its memory.

use std::sync::Arc;

use crate::config::ModelConfig;
use crate::error::Result;
use crate::events::CancelToken;
use crate::model::bind::Binder;
use crate::model::{bind_layer, Layer};

/// Supplies bound trunk layers on demand.
pub trait TrunkSource: Send + Sync {
    /// Layer `layer_idx`, bound; a streamed source gives up with `Error::Stopped` soon
    /// after `stop` is set rather than finish reading it.
    fn layer(&self, layer_idx: usize, stop: &CancelToken) -> Result<Arc<Layer>>;
}

/// Every trunk layer resident in RAM.
pub struct ResidentTrunk {
    layers: Vec<Arc<Layer>>,
}

impl ResidentTrunk {
    pub fn bind(b: &Binder, cfg: &ModelConfig) -> Result<Self> {
        Self::bind_prefix(b, cfg, cfg.n_layers)
    }

    /// Binds layers `0..n` only (a pinned prefix).
    pub fn bind_prefix(b: &Binder, cfg: &ModelConfig, n: usize) -> Result<Self> {
        let layers = (0..n).map(|l| bind_layer(b, cfg, l).map(Arc::new)).collect::<Result<Vec<_>>>()?;
        Ok(ResidentTrunk { layers })
    }

    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// The bound layers, in order.
    pub fn into_layers(self) -> Vec<Arc<Layer>> {
        self.layers
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

/// A trunk the engine also keeps a handle to (to re-pin it between generations).
impl<T: TrunkSource + ?Sized> TrunkSource for Arc<T> {
    fn layer(&self, layer_idx: usize, stop: &CancelToken) -> Result<Arc<Layer>> {
        (**self).layer(layer_idx, stop)
    }
}

impl TrunkSource for ResidentTrunk {
    fn layer(&self, layer_idx: usize, _stop: &CancelToken) -> Result<Arc<Layer>> {
        Ok(self.layers[layer_idx].clone())
    }
}
