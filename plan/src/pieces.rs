//! Layers larger than a ring slot, streamed through it in pieces.
//!
//! Owns: what a layer needs to stream in pieces ([`LayerPieces`]: its largest matrix, read
//! into a ring slot when the forward pass uses it, and the buffers of its small tensors,
//! read with the layer), the rule that says which tensors are pieces ([`is_piece_shape`]),
//! and the cost of a piece ring for a pinned prefix ([`piece_ring`]).
//! Must not: let a slot be smaller than any streamed layer's largest piece, or forget the
//! small tensors' buffers: the current layer's, and with two slots the read-ahead's.
//! Easy to break: a layer no larger than the slot streams whole even in a piece ring, so
//! only the layers larger than the slot count their small tensors' buffers.

use crate::size::exact_slot;

/// How one layer streams through a slot smaller than itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayerPieces {
    /// Bytes of its largest matrix (each matrix is read into a ring slot when used).
    pub largest_piece: u64,
    /// Bytes of the buffers its other tensors are read into, each on its own and widened
    /// like a slot ([`crate::ring_slot_bytes_for`] of each).
    pub eager_bytes: u64,
}

/// True for a tensor shape that streams as a piece: a matrix, two dimensions both larger
/// than one (the AttnRes projections `[1, E]`, the conv taps and every vector are small
/// tensors, read with the layer).
pub fn is_piece_shape(shape: &[u64]) -> bool {
    matches!(shape, [rows, cols] if *rows > 1 && *cols > 1)
}

/// A piece ring for layers `pinned..` with `slots` slots: (slot bytes, bytes of the small
/// tensors' buffers), or `None` past 64 bits or without piece figures for every layer.
pub fn piece_ring(layers: &[u64], pieces: &[LayerPieces], pinned: usize, slots: u64) -> Option<(u64, u64)> {
    if pieces.len() != layers.len() {
        return None;
    }
    let streamed = || layers.iter().zip(pieces).skip(pinned);
    let mut slot = 0u64;
    for (&whole, p) in streamed() {
        slot = slot.max(exact_slot(whole)?.min(exact_slot(p.largest_piece.max(1))?));
    }
    let mut eager = 0u64;
    for (&whole, p) in streamed() {
        if exact_slot(whole)? > slot {
            eager = eager.max(p.eager_bytes);
        }
    }
    // The layer computing, and with two slots the one read ahead.
    let layers_alive = if slots >= 2 { 2 } else { 1 };
    Some((slot, eager.checked_mul(layers_alive)?))
}
