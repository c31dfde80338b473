//! One turn's figures of `k3 bench agent`: what the run measures and the report prints.
//!
//! Owns: `TurnFigures`.

use std::time::Duration;

/// One turn's figures.
pub(super) struct TurnFigures {
    pub(super) history_tokens: usize,
    pub(super) kept: (Duration, usize, bool),
    pub(super) replay: Option<(Duration, usize)>,
}
