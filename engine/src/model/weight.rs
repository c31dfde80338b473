//! A trunk matrix as the forward pass asks for it: bound in RAM with its layer, or a
//! piece of a layer too large for a ring slot, read from the packed trunk when used.
//!
//! Owns: [`Weight`] (what every trunk matrix field holds), [`Weight::load`] (the one call
//! the forward pass makes before multiplying) and the [`PieceSource`] seam that
//! `stream::trunk_pieces` implements.
//! Must not: hold a piece after use: a loaded piece keeps a ring slot until it is
//! dropped, so the forward pass loads one piece at a time, uses it, and lets it go before
//! loading the next (a one-slot ring has nowhere else to put it).
//! Easy to break: a piece is the same bytes bound the same way as a held matrix, so the
//! arithmetic (and every logit) is the same whichever the plan chose.

use std::ops::Deref;
use std::sync::Arc;

use crate::error::Result;
use crate::events::CancelToken;
use crate::model::matrix::Matrix;

/// Reads pieces (whole tensors of a layer streamed in pieces) when the forward pass uses them.
pub trait PieceSource: Send + Sync {
    /// Piece `piece` of layer `layer_idx`, read and checked, bound as a `[rows, cols]`
    /// matrix; gives up with `Error::Stopped` soon after `stop` is set.
    fn fetch(&self, layer_idx: usize, piece: usize, shape: (usize, usize), stop: &CancelToken) -> Result<Matrix>;
}

/// Where a piece comes from.
#[derive(Clone)]
pub struct PieceRef {
    pub source: Arc<dyn PieceSource>,
    pub layer_idx: usize,
    pub piece: usize,
}

/// A trunk matrix.
#[derive(Clone)]
pub enum Weight {
    /// In RAM with its layer (a resident, pinned or whole-streamed layer, or a small
    /// tensor of a layer streamed in pieces).
    Held(Matrix),
    /// Read into a ring slot when used: `[rows, cols]`.
    Piece { at: PieceRef, rows: usize, cols: usize },
}

/// A matrix ready to multiply: borrowed from its layer, or a piece read for this use.
pub enum Loaded<'a> {
    Held(&'a Matrix),
    Piece(Matrix),
}

impl Deref for Loaded<'_> {
    type Target = Matrix;

    fn deref(&self) -> &Matrix {
        match self {
            Loaded::Held(m) => m,
            Loaded::Piece(m) => m,
        }
    }
}

impl Weight {
    /// The matrix, read first when it is a piece (stopped by `stop`).
    pub fn load(&self, stop: &CancelToken) -> Result<Loaded<'_>> {
        match self {
            Weight::Held(m) => Ok(Loaded::Held(m)),
            Weight::Piece { at, rows, cols } => {
                at.source.fetch(at.layer_idx, at.piece, (*rows, *cols), stop).map(Loaded::Piece)
            }
        }
    }

    /// The matrix when it is held (`None` for a piece, which is read only when loaded).
    pub fn held(&self) -> Option<&Matrix> {
        match self {
            Weight::Held(m) => Some(m),
            Weight::Piece { .. } => None,
        }
    }

    /// Output rows.
    pub fn rows(&self) -> usize {
        match self {
            Weight::Held(m) => m.rows(),
            Weight::Piece { rows, .. } => *rows,
        }
    }

    /// Input columns.
    pub fn cols(&self) -> usize {
        match self {
            Weight::Held(m) => m.cols(),
            Weight::Piece { cols, .. } => *cols,
        }
    }
}

impl From<Matrix> for Weight {
    fn from(m: Matrix) -> Self {
        Weight::Held(m)
    }
}
