//! Progress counting and its 10-second speed: each file's bytes on disk or in flight, a
//! monotonic count of bytes received, and a ticker that turns them into at most ten
//! [`ProgressSnapshot`]s a second (PRODUCT.md §1.1: never pins a core).
//!
//! Owns: [`Tracker`], [`run_ticker`]. Must not: use the wall clock (Instant only, DL-24).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::events::{DownloadEvent, EventSink, ProgressSnapshot};

/// The window the speed is averaged over.
pub const SPEED_WINDOW: Duration = Duration::from_secs(10);

pub struct Tracker {
    total: u64,
    have: Vec<AtomicU64>,
    received: AtomicU64,
    active: AtomicUsize,
}

impl Tracker {
    pub fn new(sizes: &[u64]) -> Tracker {
        Tracker {
            total: sizes.iter().sum(),
            have: sizes.iter().map(|_| AtomicU64::new(0)).collect(),
            received: AtomicU64::new(0),
            active: AtomicUsize::new(0),
        }
    }

    /// File `idx` now has `bytes` on disk or in flight.
    pub fn set_have(&self, idx: usize, bytes: u64) {
        if let Some(h) = self.have.get(idx) {
            h.store(bytes, Ordering::Relaxed);
        }
    }

    pub fn add_received(&self, bytes: u64) {
        self.received.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn started(&self) {
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    pub fn finished(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn done(&self) -> u64 {
        self.have.iter().map(|h| h.load(Ordering::Relaxed)).sum()
    }

    fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// The speed over the samples' span, from the oldest sample within the window.
struct SpeedWindow {
    samples: VecDeque<(Instant, u64)>,
}

impl SpeedWindow {
    fn push(&mut self, at: Instant, received: u64) -> f64 {
        self.samples.push_back((at, received));
        while self.samples.front().is_some_and(|(t, _)| at.duration_since(*t) > SPEED_WINDOW) {
            self.samples.pop_front();
        }
        match self.samples.front() {
            Some((t0, r0)) if at.duration_since(*t0) >= Duration::from_millis(500) => {
                received.saturating_sub(*r0) as f64 / at.duration_since(*t0).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

/// Emits a snapshot every `interval` (≥ 100 ms) until `stop`; one last one at the end.
pub async fn run_ticker(tracker: Arc<Tracker>, events: EventSink, interval: Duration, stop: CancellationToken) {
    let interval = interval.max(Duration::from_millis(100));
    let mut window = SpeedWindow { samples: VecDeque::new() };
    let mut last: Option<ProgressSnapshot> = None;
    loop {
        let stopped = tokio::select! {
            _ = stop.cancelled() => true,
            _ = tokio::time::sleep(interval) => false,
        };
        let speed = window.push(Instant::now(), tracker.received());
        let done = tracker.done();
        let remaining = tracker.total.saturating_sub(done);
        let snap = ProgressSnapshot {
            done_bytes: done,
            total_bytes: tracker.total,
            speed_bytes_per_s: speed,
            eta_seconds: (speed > 0.0).then(|| remaining as f64 / speed),
            active_files: tracker.active.load(Ordering::Relaxed),
        };
        if last.as_ref() != Some(&snap) {
            events(DownloadEvent::Progress(snap.clone()));
            last = Some(snap);
        }
        if stopped {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speed_falls_to_zero_after_a_window_without_data() {
        let mut w = SpeedWindow { samples: VecDeque::new() };
        let t0 = Instant::now();
        assert_eq!(w.push(t0, 0), 0.0);
        let s = w.push(t0 + Duration::from_secs(1), 1_000_000);
        assert!((s - 1e6).abs() < 1.0, "{s}");
        let stalled = w.push(t0 + Duration::from_secs(12), 1_000_000);
        assert_eq!(stalled, 0.0, "no bytes in the last 10 s");
    }
}
