//! Where each routed expert lives on disk.
//!
//! Owns: finding an expert's tensors (three MXFP4 pairs or three unquantised matrices),
//! checking they sit in one shard and tile one byte range exactly, so that fetching the
//! expert is one read (spec §6.6).
//! Must not: assume the released order: an expert whose tensors are scattered is still
//! served, by one read per tensor.

use crate::error::{Error, Result};
use crate::format::{TensorIndex, TensorInfo};
use crate::model::names::{self, ExpertProj};

/// How one expert's bytes are laid out.
#[derive(Debug, Clone)]
pub enum Placement {
    /// All tensors in one shard, back to back: one read of `[start, start + len)`.
    Contiguous { shard_idx: usize, start: u64, len: usize },
    /// Anything else: one read per tensor.
    Scattered,
}

/// The tensors of expert `expert_idx` of layer `layer_idx`.
fn expert_tensors(index: &TensorIndex, layer_idx: usize, expert_idx: usize) -> Result<Vec<&TensorInfo>> {
    let mut out = Vec::with_capacity(6);
    for proj in [ExpertProj::W1, ExpertProj::W2, ExpertProj::W3] {
        let plain = names::expert(layer_idx, expert_idx, proj, "weight");
        if let Some(t) = index.get(&plain) {
            out.push(t);
            continue;
        }
        for part in ["weight_packed", "weight_scale"] {
            let name = names::expert(layer_idx, expert_idx, proj, part);
            out.push(index.get(&name).ok_or(Error::MissingTensor { name })?);
        }
    }
    Ok(out)
}

/// Locates one expert and returns its placement and total bytes.
pub fn locate(index: &TensorIndex, layer_idx: usize, expert_idx: usize) -> Result<(Placement, u64)> {
    let mut tensors = expert_tensors(index, layer_idx, expert_idx)?;
    let total: u64 = tensors.iter().map(|t| t.nbytes).sum();
    tensors.sort_by_key(|t| (t.shard_idx, t.offset));
    let first = tensors[0];
    let tiles =
        tensors.windows(2).all(|w| w[0].shard_idx == w[1].shard_idx && w[0].offset + w[0].nbytes == w[1].offset);
    let placement = if tiles {
        Placement::Contiguous { shard_idx: first.shard_idx, start: first.offset, len: total as usize }
    } else {
        Placement::Scattered
    };
    Ok((placement, total))
}
