//! How long the drive had work: the time with at least one read piece in flight.
//!
//! Owns: [`BusyClock`], which the reader enters when a piece starts and leaves when it
//! ends; the clock runs from a start with nothing in flight to the end that leaves nothing
//! in flight, so overlapping pieces count once; beside it, the pieces' own times summed, so
//! busy time ÷ that is the mean depth while busy. `k3 bench stream` reports both (a drive
//! idle between layers, or fed too few reads at once, shows there whatever the bytes add
//! up to).
//! Must not: count a span twice, or lose the span in progress when read.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time with at least one read piece in flight.
#[derive(Debug, Default)]
pub struct BusyClock {
    state: Mutex<BusyState>,
}

#[derive(Debug, Default)]
struct BusyState {
    in_flight: u64,
    /// When the current busy span began (while `in_flight > 0`).
    since: Option<Instant>,
    /// Busy time of the spans that ended.
    ended: Duration,
    /// The pieces' own times, summed.
    piece_time: Duration,
}

impl BusyClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, BusyState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A piece starts.
    pub fn enter(&self) {
        let mut s = self.lock();
        if s.in_flight == 0 {
            s.since = Some(Instant::now());
        }
        s.in_flight += 1;
    }

    /// A piece that took `took` ended.
    pub fn leave(&self, took: Duration) {
        let mut s = self.lock();
        s.piece_time += took;
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            if let Some(since) = s.since.take() {
                s.ended += since.elapsed();
            }
        }
    }

    /// Busy time so far, the span in progress included.
    pub fn busy(&self) -> Duration {
        let s = self.lock();
        s.ended + s.since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// The ended pieces' own times, summed.
    pub fn piece_time(&self) -> Duration {
        self.lock().piece_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_pieces_count_once_and_idle_time_not_at_all() {
        let clock = BusyClock::default();
        clock.enter();
        clock.enter();
        std::thread::sleep(Duration::from_millis(30));
        clock.leave(Duration::from_millis(30));
        std::thread::sleep(Duration::from_millis(30));
        clock.leave(Duration::from_millis(60));
        let one_span = clock.busy();
        assert!(one_span >= Duration::from_millis(60), "{one_span:?}");
        assert_eq!(clock.piece_time(), Duration::from_millis(90), "each piece's own time is summed");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(clock.busy(), one_span, "nothing in flight: the clock stands");
        clock.enter();
        std::thread::sleep(Duration::from_millis(20));
        assert!(clock.busy() >= one_span + Duration::from_millis(20), "a span in progress counts");
        clock.leave(Duration::from_millis(20));
    }
}
