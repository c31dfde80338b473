//! Per-sequence memory: KDA states and MLA caches, one slot per layer.
//!
//! Owns: what incremental decoding carries between calls (spec §4.8), and tentative
//! passes: [`SequenceState::begin_tentative`] before a speculative verify pass,
//! [`SequenceState::keep_tentative`] after it keeps the accepted positions and leaves no
//! trace of the rejected ones (KDA layers replay their journal, MLA caches truncate).
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
    /// Positions held when a tentative pass began.
    tentative_from: Option<usize>,
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
        SequenceState { layers, n_positions: 0, tentative_from: None }
    }

    /// A state of no layers: it stands in while the real one is inside a batched step
    /// (`engine::gate`) and is never passed to the model.
    pub(crate) fn detached() -> Self {
        SequenceState { layers: Vec::new(), n_positions: 0, tentative_from: None }
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
        self.tentative_from = None;
    }

    /// Starts a tentative pass: what the next forward call adds can be partly undone.
    pub fn begin_tentative(&mut self) {
        for layer in &mut self.layers {
            if let LayerMemory::Kda(s) = layer {
                s.begin_tentative();
            }
        }
        self.tentative_from = Some(self.n_positions);
    }

    /// Ends a tentative pass keeping its first `keep` positions: the state is then, bit for
    /// bit, what feeding only those positions would have left. Without a tentative pass,
    /// nothing changes.
    pub fn keep_tentative(&mut self, cfg: &ModelConfig, keep: usize) {
        let Some(from) = self.tentative_from.take() else { return };
        let keep_to = (from + keep).min(self.n_positions);
        for layer in &mut self.layers {
            match layer {
                LayerMemory::Kda(s) => s.keep_tentative(cfg, keep_to - from),
                LayerMemory::Mla(c) => c.truncate(cfg, keep_to),
            }
        }
        self.n_positions = keep_to;
    }

    /// Floats of the carried numbers of a state of `cfg` holding `positions` positions.
    pub(crate) fn carried_floats(cfg: &ModelConfig, positions: usize) -> usize {
        let kda = KdaState::carried_floats(cfg);
        let mla = MlaCache::floats_per_position(cfg);
        cfg.layer_kinds
            .iter()
            .map(|k| match k {
                LayerKind::Kda => kda,
                LayerKind::Mla => positions * mla,
            })
            .sum()
    }

    /// Every carried number, layer by layer (KDA: state and histories; MLA: each
    /// position's `[latent | k_rope]` row), appended to `out` as f32 little-endian.
    pub(crate) fn write_carried(&self, out: &mut Vec<u8>) {
        let mut put = |v: &[f32]| v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        for layer in &self.layers {
            match layer {
                LayerMemory::Kda(s) => s.carried().into_iter().for_each(&mut put),
                LayerMemory::Mla(c) => put(c.cached()),
            }
        }
    }

    /// Replaces every carried number with `bytes`, as [`SequenceState::write_carried`]
    /// wrote them for `positions` positions of `cfg`; false (and a reset state) when the
    /// length does not match or `positions` exceeds the reserved room.
    pub(crate) fn read_carried(&mut self, cfg: &ModelConfig, positions: usize, bytes: &[u8], room: usize) -> bool {
        self.reset();
        if positions > room || bytes.len() != Self::carried_floats(cfg, positions) * 4 {
            return false;
        }
        let mut floats = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let mla_width = MlaCache::floats_per_position(cfg);
        for layer in &mut self.layers {
            match layer {
                LayerMemory::Kda(s) => {
                    for v in s.carried_mut() {
                        v.iter_mut().zip(&mut floats).for_each(|(x, f)| *x = f);
                    }
                }
                LayerMemory::Mla(c) => {
                    let rows: Vec<f32> = floats.by_ref().take(positions * mla_width).collect();
                    c.restore(positions, &rows);
                }
            }
        }
        self.n_positions = positions;
        true
    }

    /// Grows the state to `positions` positions by repeating the MLA rows it holds, in
    /// order, as often as needed (KDA states stay as they are): a benchmark of decoding at
    /// a long context, whose per-step work depends on the positions held, not on their
    /// values, without the hours a real prefill of them takes on a large model. False (and
    /// nothing changed) when the state is empty or `positions` exceeds `room`.
    pub(crate) fn repeat_positions_to(&mut self, cfg: &ModelConfig, positions: usize, room: usize) -> bool {
        let held = self.n_positions;
        if held == 0 || positions > room || positions < held {
            return false;
        }
        let width = MlaCache::floats_per_position(cfg);
        for layer in &mut self.layers {
            if let LayerMemory::Mla(c) = layer {
                let mut rows = c.cached().to_vec();
                let original = held * width;
                while rows.len() < positions * width {
                    let take = (positions * width - rows.len()).min(original);
                    rows.extend_from_within(..take);
                }
                c.restore(positions, &rows);
            }
        }
        self.n_positions = positions;
        true
    }

    /// True when both states hold the same positions with the same numbers, bit for bit.
    pub fn same_bits(&self, other: &SequenceState) -> bool {
        self.n_positions == other.n_positions
            && self.layers.len() == other.layers.len()
            && self.layers.iter().zip(&other.layers).all(|pair| match pair {
                (LayerMemory::Kda(a), LayerMemory::Kda(b)) => a.same_bits(b),
                (LayerMemory::Mla(a), LayerMemory::Mla(b)) => a.same_bits(b),
                _ => false,
            })
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
