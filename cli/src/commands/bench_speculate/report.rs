//! What `k3 bench speculate` reports: each case's decode rates serial and speculative, their
//! ratio and the drafts' acceptance (k3-bench's [`CaseFigures`]), as text or as `--json`
//! derived from its typed [`SpeculateReport`].

use k3_bench::speculate::{CaseFigures, SpeculateReport};

use super::cases::Case;
use crate::args::BenchSpeculateArgs;
use crate::out::Json;

pub(super) fn report(args: &BenchSpeculateArgs, cases: &[Case]) {
    let figures = cases.iter().map(|c| CaseFigures::of(c.prompt, c.drafts.label(), &c.totals)).collect();
    let report = SpeculateReport { max_draft: args.speculate, rounds: args.rounds, cases: figures };
    if args.json {
        outln!("{}", Json(&report));
        return;
    }
    for f in &report.cases {
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
