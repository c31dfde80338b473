//! The trunk ring's buffers: at most `slots` aligned buffers of `slot_bytes` each, lent to
//! whole layers and to pieces of larger layers, and reused as they come back.
//!
//! Owns: counting the buffers (never more than the plan's slots exist), lending one
//! ([`Ring::take`] for a read the forward pass waits on, [`Ring::try_take`] for a read
//! ahead that may be skipped), and reclaiming a lent buffer once nothing binds it.
//! Must not: allocate past the plan: a take with no buffer free is an error naming the
//! file, never a silent extra slot. A buffer taken and dropped unlent (a failed read) is
//! reported with [`Ring::lost`], or its slot would stay counted.
//! Easy to break: a buffer comes back only when every view of it is dropped (the layer or
//! piece bound in it), so the forward pass lets a layer or piece go before asking for the
//! next.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::io::Blob;

/// The ring of a streamed trunk.
pub struct Ring {
    bin_path: PathBuf,
    inner: Mutex<Buffers>,
}

struct Buffers {
    slot_bytes: usize,
    slots: usize,
    idle: Vec<Blob>,
    lent: Vec<Arc<Blob>>,
    /// Buffers alive now (idle + lent).
    created: usize,
}

impl Ring {
    /// A ring of `slots` buffers of `slot_bytes` (allocated when first taken) for reads
    /// of `bin_path`.
    pub fn new(bin_path: PathBuf, slot_bytes: usize, slots: usize) -> Self {
        let buffers = Buffers { slot_bytes, slots: slots.max(1), idle: Vec::new(), lent: Vec::new(), created: 0 };
        Ring { bin_path, inner: Mutex::new(buffers) }
    }

    fn lock(&self) -> MutexGuard<'_, Buffers> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes of each slot.
    pub fn slot_bytes(&self) -> usize {
        self.lock().slot_bytes
    }

    /// A free buffer of at least `bytes`, or `None` when every slot is lent (or `bytes`
    /// is more than a slot).
    pub fn try_take(&self, bytes: usize) -> Option<Blob> {
        let mut b = self.lock();
        let (free, lent): (Vec<_>, Vec<_>) =
            std::mem::take(&mut b.lent).into_iter().partition(|blob| Arc::strong_count(blob) == 1);
        b.lent = lent;
        for blob in free {
            if let Ok(blob) = Arc::try_unwrap(blob) {
                b.idle.push(blob);
            }
        }
        if bytes > b.slot_bytes {
            return None;
        }
        if let Some(blob) = b.idle.pop() {
            return Some(blob);
        }
        if b.created >= b.slots {
            return None;
        }
        b.created += 1;
        Some(Blob::zeroed(b.slot_bytes))
    }

    /// A free buffer of at least `bytes` for `what` (a layer or a tensor), or the error
    /// when every slot is lent.
    pub fn take(&self, bytes: usize, what: &str) -> Result<Blob> {
        self.try_take(bytes).ok_or_else(|| Error::Trunk {
            path: self.bin_path.clone(),
            reason: format!("no free ring slot for {what}: the ring is smaller than its use (a bug: please report it)"),
        })
    }

    /// Lends `blob` to a layer or piece bound in it: it comes back when that is dropped.
    pub fn lend(&self, blob: Arc<Blob>) {
        self.lock().lent.push(blob);
    }

    /// Counts a buffer taken and then dropped unlent (its read or binding failed), so its
    /// slot can be allocated again.
    pub fn lost(&self) {
        let mut b = self.lock();
        b.created = b.created.saturating_sub(1);
    }

    /// Reshapes the ring for a new plan: the idle buffers are freed now, the lent ones
    /// when their layers are dropped.
    pub fn reshape(&self, slot_bytes: usize, slots: usize) {
        let mut b = self.lock();
        *b = Buffers { slot_bytes, slots: slots.max(1), idle: Vec::new(), lent: Vec::new(), created: 0 };
    }
}
