//! When the queue will be through, from its own measured rates.
//!
//! Owns: [`eta_seconds`]. The rate is this queue's: the mean time of its last answered
//! items (at most [`RECENT`]), so a change of model, budget or prompt length shows soon.
//! Must not: guess before anything was measured (no answered item: no ETA).

/// Answered items the rate is taken over.
pub const RECENT: usize = 20;

/// Seconds until every waiting and running item is answered: the items' mean time
/// (`answered`, oldest first) for each waiting one, and what is left of it for each running
/// one (`running`: the seconds each has run), over the `width` replies that run at once.
pub fn eta_seconds(answered: &[f64], waiting: usize, running: &[f64], width: usize) -> Option<f64> {
    let recent = &answered[answered.len().saturating_sub(RECENT)..];
    if recent.is_empty() {
        return None;
    }
    let mean = recent.iter().sum::<f64>() / recent.len() as f64;
    let left_running: f64 = running.iter().map(|ran| (mean - ran).max(0.0)).sum();
    Some((waiting as f64 * mean + left_running) / width.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_is_the_mean_time_of_what_is_left_over_the_width() {
        assert_eq!(eta_seconds(&[], 5, &[1.0], 1), None);
        assert_eq!(eta_seconds(&[10.0, 20.0], 2, &[5.0], 1), Some(2.0 * 15.0 + 10.0));
        assert_eq!(eta_seconds(&[10.0], 4, &[30.0], 2), Some(20.0), "an overrunning item adds nothing");
        let mut long: Vec<f64> = vec![100.0; 50];
        long.extend([1.0; RECENT]);
        assert_eq!(eta_seconds(&long, 1, &[], 1), Some(1.0), "only the recent items set the rate");
    }
}
