//! [`ServerStats`]: counters of this server, readable at any time (the handle's status,
//! `GET /health`).
//!
//! Owns: requests answered, generations started, 429s, and the cancel-on-disconnect
//! latency — from the moment the server saw the client gone to the engine job's end
//! (RELIABILITY §3: ≤ 250 ms).
//! Must not: lock: every field is an atomic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// Live counters (share behind an `Arc`).
#[derive(Debug, Default)]
pub struct ServerStats {
    requests: AtomicU64,
    generations: AtomicU64,
    queue_full: AtomicU64,
    disconnect_cancels: AtomicU64,
    /// Microseconds + 1 (0 = none yet).
    last_cancel_us: AtomicU64,
    max_cancel_us: AtomicU64,
}

/// One reading of [`ServerStats`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsSnapshot {
    pub requests: u64,
    pub generations: u64,
    pub queue_full: u64,
    /// Generations stopped because their client went away.
    pub disconnect_cancels: u64,
    /// Client gone → engine job ended, the last one and the largest, in seconds.
    pub last_cancel_seconds: Option<f64>,
    pub max_cancel_seconds: Option<f64>,
}

impl ServerStats {
    pub fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn generation(&self) {
        self.generations.fetch_add(1, Ordering::Relaxed);
    }

    pub fn queue_full(&self) {
        self.queue_full.fetch_add(1, Ordering::Relaxed);
    }

    /// A generation whose client left ended `latency` after the server saw it leave.
    pub fn disconnect_cancelled(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX - 1) + 1;
        self.disconnect_cancels.fetch_add(1, Ordering::Relaxed);
        self.last_cancel_us.store(us, Ordering::Relaxed);
        self.max_cancel_us.fetch_max(us, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let seconds = |v: u64| (v > 0).then(|| (v - 1) as f64 / 1e6);
        StatsSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            generations: self.generations.load(Ordering::Relaxed),
            queue_full: self.queue_full.load(Ordering::Relaxed),
            disconnect_cancels: self.disconnect_cancels.load(Ordering::Relaxed),
            last_cancel_seconds: seconds(self.last_cancel_us.load(Ordering::Relaxed)),
            max_cancel_seconds: seconds(self.max_cancel_us.load(Ordering::Relaxed)),
        }
    }
}
