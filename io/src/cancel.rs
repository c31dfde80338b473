//! [`CancelToken`]: the flag a caller sets to stop work that reads from the drive; the
//! engine checks it between layers and routed experts, [`crate::Reader`] before each piece
//! and while waiting for one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cheap, cloneable flag that stops a generation: between layers and routed experts,
/// and inside streamed reads before each piece and while waiting for one (so a slow drive
/// delays a stop by at most the pieces already in flight).
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    /// Requests a stop; the engine notices at the next layer, expert or read piece.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}
