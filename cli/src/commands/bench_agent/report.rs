//! What `k3 bench agent` prints: the table, a row per turn as it finishes, and the summary
//! (the median speed-up past 1,000 prompt tokens); or `--json`, derived from the typed
//! [`AgentReport`].

use serde::Serialize;

use super::figures::TurnFigures;
use crate::args::BenchAgentArgs;
use crate::out::Json;
use k3_plan::stats::median;

/// `k3 bench agent --json`.
#[derive(Serialize)]
struct AgentReport {
    turns: Vec<TurnJson>,
    speedups_past_1000_tokens: Vec<f64>,
    /// Always true: replies that differ are an error, never a figure.
    identical_tokens: bool,
}

/// One turn: its prompt, the kept session's prefill and the replay's, when there was one.
#[derive(Serialize)]
struct TurnJson {
    turn: usize,
    prompt_tokens: usize,
    kept: KeptJson,
    replay: Option<ReplayJson>,
}

/// The kept session's time to first token, positions prefilled and whether its state was
/// reused.
#[derive(Serialize)]
struct KeptJson {
    ttft_s: f64,
    prefilled: usize,
    reused: bool,
}

/// The whole history prefilled again in a fresh session.
#[derive(Serialize)]
struct ReplayJson {
    ttft_s: f64,
    prefilled: usize,
}

/// The table's title and column heads (each turn's row is printed as it finishes: a turn
/// on a large checkpoint takes minutes).
pub(super) fn print_header(args: &BenchAgentArgs) {
    println!(
        "agent loop, {} turns ({} tokens per new message, {}-token replies), time to first token:",
        args.turns, args.result_tokens, args.reply_tokens
    );
    println!("  turn  prompt  kept: prefilled      ttft   replay: prefilled      ttft   speed-up");
}

pub(super) fn print_turn(turn: usize, f: &TurnFigures) {
    let (kept_t, kept_n, reused) = f.kept;
    let replay = f.replay.map_or("        —           —          —".to_string(), |(t, n)| {
        format!("{n:9} {:9.2} s {:9.1}×", t.as_secs_f64(), t.as_secs_f64() / kept_t.as_secs_f64().max(1e-9))
    });
    let mark = if reused || turn == 1 { "" } else { "  (kept state not reused)" };
    println!("  {turn:4} {:7} {kept_n:15} {:9.2} s  {replay}{mark}", f.history_tokens, kept_t.as_secs_f64());
}

/// The summary: the median speed-up over the replayed turns past 1,000 prompt tokens (or
/// the whole table as JSON).
pub(super) fn report(args: &BenchAgentArgs, figures: &[TurnFigures]) {
    let speedups: Vec<f64> = figures
        .iter()
        .filter(|f| f.history_tokens > 1000)
        .filter_map(|f| f.replay.map(|(t, _)| t.as_secs_f64() / f.kept.0.as_secs_f64().max(1e-9)))
        .collect();
    if args.json {
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
        let report = AgentReport { turns, speedups_past_1000_tokens: speedups, identical_tokens: true };
        println!("{}", Json(&report));
        return;
    }
    if speedups.is_empty() {
        println!("no replayed turn's prompt exceeds 1,000 tokens");
    } else {
        let mut sorted = speedups.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "past 1,000 prompt tokens: {:.1}× faster with the kept state (median of {} turn{}; least {:.1}×); \
             tokens identical",
            median(&speedups),
            speedups.len(),
            if speedups.len() == 1 { "" } else { "s" },
            sorted[0]
        );
    }
}
