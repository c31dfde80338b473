//! [`Admission`]: the generations decoding together (the runtime's batch), a bounded FIFO
//! behind them (AP-12).
//!
//! Owns: counting this server's generations in flight (running + waiting); a request
//! over `batch + capacity` is refused (429, with `Retry-After`) instead of queued. The order itself is the
//! runtime's FIFO, which the app's and the CLI's jobs share.
//! Must not: release a slot before the engine job has ended (the [`Slot`] is held by the
//! job's `JobWatch` until its `end`), except for a job whose client left while it was
//! still queued: that job's `begin` refuses it, so it never runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The generation slots of one server.
#[derive(Debug)]
pub struct Admission {
    limit: usize,
    in_flight: AtomicUsize,
}

/// One admitted generation; frees its slot when dropped.
#[derive(Debug)]
pub struct Slot {
    admission: Arc<Admission>,
}

impl Admission {
    /// `running` decoding together (at least one) plus `waiting` queued.
    pub fn new(running: usize, waiting: usize) -> Arc<Self> {
        Arc::new(Admission { limit: waiting.saturating_add(running.max(1)), in_flight: AtomicUsize::new(0) })
    }

    /// A slot, or `None` when the queue is full.
    pub fn try_admit(self: &Arc<Self>) -> Option<Slot> {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.limit).then_some(n + 1))
            .ok()
            .map(|_| Slot { admission: self.clone() })
    }

    /// Generations running or waiting.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.admission.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_running_and_the_waiting_ones_then_none_until_a_slot_frees() {
        let a = Admission::new(1, 2);
        let slots: Vec<Slot> = (0..3).filter_map(|_| a.try_admit()).collect();
        assert_eq!(slots.len(), 3);
        assert!(a.try_admit().is_none());
        drop(slots);
        assert_eq!(a.in_flight(), 0);
        assert!(a.try_admit().is_some());
    }

    #[test]
    fn a_batch_runs_beside_the_waiting_ones() {
        let a = Admission::new(4, 2);
        let slots: Vec<Slot> = (0..10).filter_map(|_| a.try_admit()).collect();
        assert_eq!(slots.len(), 6, "4 decoding together and 2 waiting");
    }
}
