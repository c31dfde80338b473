//! Per-sequence memory: KDA states and MLA caches, one slot per layer.
//!
//! Owns: what incremental decoding carries between calls (spec §4.8).
//! Must not: carry Attention Residual blocks or prefix: those are rebuilt per token.

use crate::config::{LayerKind, ModelConfig};
use crate::model::kda::KdaState;
use crate::model::mla::MlaCache;

/// Layer memory of one sequence.
enum LayerMemory {
    Kda(Box<KdaState>),
    Mla(MlaCache),
}

/// Everything a sequence carries between forward calls.
pub struct SequenceState {
    layers: Vec<LayerMemory>,
    n_positions: usize,
}

impl SequenceState {
    /// A fresh state for `cfg` (no positions) whose MLA caches have room for exactly
    /// `context_length` positions.
    pub fn new(cfg: &ModelConfig, context_length: usize) -> Self {
        let layers = cfg
            .layer_kinds
            .iter()
            .map(|k| match k {
                LayerKind::Kda => LayerMemory::Kda(Box::new(KdaState::new(cfg))),
                LayerKind::Mla => LayerMemory::Mla(MlaCache::with_capacity(cfg, context_length)),
            })
            .collect();
        SequenceState { layers, n_positions: 0 }
    }

    /// Back to no positions, keeping the allocations.
    pub fn reset(&mut self) {
        for layer in &mut self.layers {
            match layer {
                LayerMemory::Kda(s) => s.clear(),
                LayerMemory::Mla(c) => c.clear(),
            }
        }
        self.n_positions = 0;
    }

    /// Positions processed so far.
    pub fn n_positions(&self) -> usize {
        self.n_positions
    }

    pub(crate) fn advance(&mut self, n: usize) {
        self.n_positions += n;
    }

    pub(crate) fn kda_mut(&mut self, layer_idx: usize) -> &mut KdaState {
        match &mut self.layers[layer_idx] {
            LayerMemory::Kda(s) => s,
            LayerMemory::Mla(_) => unreachable!("layer {layer_idx} is MLA; the state was built from the same config"),
        }
    }

    pub(crate) fn mla_mut(&mut self, layer_idx: usize) -> &mut MlaCache {
        match &mut self.layers[layer_idx] {
            LayerMemory::Mla(c) => c,
            LayerMemory::Kda(_) => unreachable!("layer {layer_idx} is KDA; the state was built from the same config"),
        }
    }
}
