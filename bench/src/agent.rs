//! `k3 bench agent`: an agent loop's turns, each prefilled on the kept session and, to
//! compare, replayed whole in a fresh one. The turns' times go in ([`TurnFigures`]); the
//! speed-ups past 1,000 prompt tokens, their median and least come out ([`AgentReport`]).

use std::time::Duration;

use k3_plan::stats::median;
use serde::Serialize;

/// One turn as measured.
pub struct TurnFigures {
    pub history_tokens: usize,
    /// The kept session: time to first token, positions prefilled, whether its state was reused.
    pub kept: (Duration, usize, bool),
    /// The replay: time to first token and positions prefilled, when the turn was replayed.
    pub replay: Option<(Duration, usize)>,
}

impl TurnFigures {
    /// How many times faster the kept session reached its first token than the replay.
    pub fn speedup(&self) -> Option<f64> {
        self.replay.map(|(t, _)| t.as_secs_f64() / self.kept.0.as_secs_f64().max(1e-9))
    }
}

/// `k3 bench agent --json`.
#[derive(Serialize)]
pub struct AgentReport {
    pub turns: Vec<TurnJson>,
    pub speedups_past_1000_tokens: Vec<f64>,
    /// Always true: replies that differ are an error, never a figure.
    pub identical_tokens: bool,
}

/// One turn: its prompt, the kept session's prefill and the replay's, when there was one.
#[derive(Serialize)]
pub struct TurnJson {
    pub turn: usize,
    pub prompt_tokens: usize,
    pub kept: KeptJson,
    pub replay: Option<ReplayJson>,
}

/// The kept session's time to first token, positions prefilled and whether its state was
/// reused.
#[derive(Serialize)]
pub struct KeptJson {
    pub ttft_s: f64,
    pub prefilled: usize,
    pub reused: bool,
}

/// The whole history prefilled again in a fresh session.
#[derive(Serialize)]
pub struct ReplayJson {
    pub ttft_s: f64,
    pub prefilled: usize,
}

/// The speed-ups past 1,000 prompt tokens in words' terms: their median, their least and how
/// many turns they are.
pub struct SpeedupSummary {
    pub median: f64,
    pub least: f64,
    pub turns: usize,
}

impl AgentReport {
    pub fn of(figures: &[TurnFigures]) -> Self {
        let speedups = figures.iter().filter(|f| f.history_tokens > 1000).filter_map(TurnFigures::speedup).collect();
        let turns = figures
            .iter()
            .enumerate()
            .map(|(i, f)| TurnJson {
                turn: i + 1,
                prompt_tokens: f.history_tokens,
                kept: KeptJson { ttft_s: f.kept.0.as_secs_f64(), prefilled: f.kept.1, reused: f.kept.2 },
                replay: f.replay.map(|(t, n)| ReplayJson { ttft_s: t.as_secs_f64(), prefilled: n }),
            })
            .collect();
        AgentReport { turns, speedups_past_1000_tokens: speedups, identical_tokens: true }
    }

    /// The summary of the speed-ups past 1,000 prompt tokens (None: no replayed turn's
    /// prompt was that long).
    pub fn summary(&self) -> Option<SpeedupSummary> {
        let s = &self.speedups_past_1000_tokens;
        let least = s.iter().copied().min_by(f64::total_cmp)?;
        Some(SpeedupSummary { median: median(s), least, turns: s.len() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_only_replayed_turns_past_1000_prompt_tokens() {
        let turn = |tokens, kept: f64, replay: Option<f64>| TurnFigures {
            history_tokens: tokens,
            kept: (Duration::from_secs_f64(kept), 10, true),
            replay: replay.map(|r| (Duration::from_secs_f64(r), tokens)),
        };
        let report = AgentReport::of(&[
            turn(900, 1.0, Some(50.0)),
            turn(1200, 1.0, Some(4.0)),
            turn(2000, 0.5, None),
            turn(3000, 1.0, Some(8.0)),
            turn(4000, 2.0, Some(12.0)),
        ]);
        assert_eq!(report.speedups_past_1000_tokens, vec![4.0, 8.0, 6.0]);
        let s = report.summary().unwrap();
        assert_eq!((s.median, s.least, s.turns), (6.0, 4.0, 3));
        assert!(AgentReport::of(&[turn(900, 1.0, Some(2.0))]).summary().is_none());
        assert_eq!(report.turns[2].replay.as_ref().map(|r| r.prefilled), None);
    }
}
