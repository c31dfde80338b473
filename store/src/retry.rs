//! When to try again: jittered exponential backoff for transient failures (RELIABILITY
//! DL-09), honouring the server's `Retry-After`, with no limit on the number of tries.
//!
//! Owns: [`Backoff`] and [`retry_after`]. Must not: sleep itself (callers sleep so a stop
//! interrupts the wait) or read the wall clock (waits are durations: DL-24).

use std::time::Duration;

use rand::Rng;

/// Longest `Retry-After` honoured; a longer one is capped rather than trusted blindly.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(15 * 60);

#[derive(Clone, Debug)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    attempt: u32,
}

impl Backoff {
    /// Waits that start near `base` and double up to `cap` (2 s → 60 s for real use).
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff { base, cap: cap.max(base), attempt: 0 }
    }

    /// Failures since the last success.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The wait before the next try: a uniform draw in [d/2, d] for d = base·2^attempt
    /// capped, or the server's `Retry-After` when that is longer.
    pub fn next_wait(&mut self, retry_after: Option<Duration>) -> Duration {
        let exp = 2u32.saturating_pow(self.attempt.min(16));
        let full = self.base.saturating_mul(exp).min(self.cap);
        self.attempt = self.attempt.saturating_add(1);
        let jittered = full.mul_f64(rand::rng().random_range(0.5..=1.0));
        match retry_after {
            Some(server) => server.min(RETRY_AFTER_CAP).max(jittered),
            None => jittered,
        }
    }

    /// Progress was made: the next failure starts from `base` again.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// The wait a `Retry-After` header value asks for: seconds, or an HTTP date.
pub fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_the_cap_with_jitter_and_reset() {
        let mut b = Backoff::new(Duration::from_secs(2), Duration::from_secs(60));
        let waits: Vec<Duration> = (0..8).map(|_| b.next_wait(None)).collect();
        for (i, w) in waits.iter().enumerate() {
            let full = Duration::from_secs(2 * (1u64 << i)).min(Duration::from_secs(60));
            assert!(*w >= full / 2 && *w <= full, "attempt {i}: {w:?} outside [{:?}, {full:?}]", full / 2);
        }
        b.reset();
        assert!(b.next_wait(None) <= Duration::from_secs(2));
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_millis(20));
        assert_eq!(b.next_wait(Some(Duration::from_secs(7))), Duration::from_secs(7));
        assert_eq!(b.next_wait(Some(Duration::from_secs(100_000))), RETRY_AFTER_CAP);
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(retry_after(&later, now), Some(Duration::from_secs(30)));
        assert_eq!(retry_after("soon", now), None);
    }
}
