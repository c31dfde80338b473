//! The rows of a batched forward pass and whose memory each belongs to.
//!
//! Owns: [`SeqRows`], one sequence's memory and the rows of the pass that are its new
//! tokens. A forward pass over several sequences lays their tokens out one sequence after
//! another (`[rows × hidden]`); every step but the token mixer's recurrence or attention
//! works row by row on all of them at once (one read of each trunk weight and of each
//! routed expert for every row that uses it), and each row's arithmetic is the same
//! whatever else is in the batch, so a sequence's logits do not depend on its company.
//! Must not: let two entries cover the same rows or the same memory.

use std::ops::Range;

/// One sequence's share of a batched pass: its memory (`S` is the whole
/// `SequenceState` at the model, one layer's slot inside a token mixer) and its rows,
/// in position order.
pub struct SeqRows<'a, S> {
    pub memory: &'a mut S,
    pub rows: Range<usize>,
}

impl<S> SeqRows<'_, S> {
    /// The same rows with a part of this sequence's memory (`part` picks it).
    pub fn with<'b, T>(&'b mut self, part: impl FnOnce(&'b mut S) -> &'b mut T) -> SeqRows<'b, T> {
        SeqRows { rows: self.rows.clone(), memory: part(self.memory) }
    }

    /// Rows of this sequence.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True for a sequence with no new token.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// This sequence's span of a `[rows × width]` buffer.
    pub fn span(&self, width: usize) -> Range<usize> {
        self.rows.start * width..self.rows.end * width
    }
}
