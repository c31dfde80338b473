//! What `k3 bench speculate` reports: each case's decode rates serial and speculative, their
//! ratio and the drafts' acceptance ([`CaseFigures`]), as text or as `--json` derived from
//! the typed [`SpeculateReport`].

use serde::Serialize;

use super::cases::Case;
use crate::args::BenchSpeculateArgs;
use crate::out::Json;

/// `k3 bench speculate --json`.
#[derive(Serialize)]
struct SpeculateReport<'a> {
    max_draft: u8,
    rounds: usize,
    cases: &'a [CaseFigures],
}

/// One case's figures over its rounds.
#[derive(Serialize)]
struct CaseFigures {
    prompt: &'static str,
    drafts: &'static str,
    decoded_tokens: usize,
    serial_tokens_per_second: f64,
    speculative_tokens_per_second: f64,
    speedup: f64,
    verify_passes: usize,
    drafted: usize,
    accepted: usize,
    acceptance: f64,
    /// Always true: a difference is an error, never a figure.
    tokens_identical: bool,
}

impl CaseFigures {
    fn of(c: &Case) -> Self {
        let t = &c.totals;
        let rate = |s: f64| if s > 0.0 { t.decoded as f64 / s } else { 0.0 };
        let (serial, fast) = (rate(t.serial_seconds), rate(t.speculative_seconds));
        let acceptance = if t.stats.drafted > 0 { t.stats.accepted as f64 / t.stats.drafted as f64 } else { 0.0 };
        CaseFigures {
            prompt: c.prompt,
            drafts: c.drafts.label(),
            decoded_tokens: t.decoded,
            serial_tokens_per_second: serial,
            speculative_tokens_per_second: fast,
            speedup: if serial > 0.0 { fast / serial } else { 0.0 },
            verify_passes: t.stats.verify_passes,
            drafted: t.stats.drafted,
            accepted: t.stats.accepted,
            acceptance,
            tokens_identical: true,
        }
    }
}

pub(super) fn report(args: &BenchSpeculateArgs, cases: &[Case]) {
    let figures: Vec<CaseFigures> = cases.iter().map(CaseFigures::of).collect();
    if args.json {
        outln!("{}", Json(&SpeculateReport { max_draft: args.speculate, rounds: args.rounds, cases: &figures }));
        return;
    }
    for f in &figures {
        outln!(
            "{} prompt, {}: {:.3} tok/s serial, {:.3} tok/s speculative ({:.2}×) · {} of {} draft tokens accepted ({:.0} %) in {} verify passes · tokens identical",
            f.prompt,
            f.drafts,
            f.serial_tokens_per_second,
            f.speculative_tokens_per_second,
            f.speedup,
            f.accepted,
            f.drafted,
            100.0 * f.acceptance,
            f.verify_passes
        );
    }
}
