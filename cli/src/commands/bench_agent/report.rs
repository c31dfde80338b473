//! What `k3 bench agent` prints: the table, a row per turn as it finishes, and the summary
//! (the median speed-up past 1,000 prompt tokens); or `--json`, derived from k3-bench's
//! typed [`AgentReport`].

use k3_bench::agent::{AgentReport, TurnFigures};

use crate::args::BenchAgentArgs;
use crate::out::Json;

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
    let replay = match (f.replay, f.speedup()) {
        (Some((t, n)), Some(speedup)) => format!("{n:9} {:9.2} s {speedup:9.1}×", t.as_secs_f64()),
        _ => "        —           —          —".to_string(),
    };
    let mark = if reused || turn == 1 { "" } else { "  (kept state not reused)" };
    println!("  {turn:4} {:7} {kept_n:15} {:9.2} s  {replay}{mark}", f.history_tokens, kept_t.as_secs_f64());
}

/// The summary: the median speed-up over the replayed turns past 1,000 prompt tokens (or
/// the whole table as JSON).
pub(super) fn report(args: &BenchAgentArgs, figures: &[TurnFigures]) {
    let report = AgentReport::of(figures);
    if args.json {
        println!("{}", Json(&report));
        return;
    }
    match report.summary() {
        None => println!("no replayed turn's prompt exceeds 1,000 tokens"),
        Some(s) => println!(
            "past 1,000 prompt tokens: {:.1}× faster with the kept state (median of {} turn{}; least {:.1}×); \
             tokens identical",
            s.median,
            s.turns,
            if s.turns == 1 { "" } else { "s" },
            s.least
        ),
    }
}
