//! `k3 bench stream`: streamed decode against the honest I/O floor (the drive's best
//! measured read, never the engine's own pattern) and the compute time; with `--versus DIR`,
//! two packed trunks (e.g. raw and `--codec huffman`) alternated in one run, with the ratio;
//! with `--versus-residency RULE`, the same trunk under two residency rules (`prefix`,
//! `cost`: the cost rule's rates measured once, before the first run). [`measure`] measures
//! a run; the figures and the comparison are k3-bench's typed results (`--json` is derived
//! from them); [`report`] prints them.

mod measure;
mod report;

use k3_bench::stream::{Comparison, VersusRun};
use measure::measure;

use super::{input_error, Failure};
use crate::args::{BenchStreamArgs, ModelArgs};

pub fn stream(mut args: BenchStreamArgs) -> Result<(), Failure> {
    if args.model.memory.preset.is_none() && args.model.memory.cache_budget.is_none() {
        return Err(input_error("bench stream needs a budget: --preset P or --trunk-budget/--cache-budget".into()));
    }
    // A 4-token prompt, then the measured steps, within the context the plan reserves (what
    // the measurement is told, not what this machine's free memory allows).
    let context = *args.model.memory.context_length.get_or_insert(k3_engine::DEFAULT_CONTEXT_LENGTH);
    if args.tokens == 0 || args.tokens.saturating_add(5) > context {
        return Err(input_error(format!(
            "--tokens {}: use 1 to {} (the context length less the prompt)",
            args.tokens,
            context.saturating_sub(5)
        )));
    }
    if args.model.memory.residency == "cost" || args.versus_residency.as_deref() == Some("cost") {
        // Measured once, so every run of this command plans from the same rates.
        let pattern = super::disk::read_pattern(&args.model.memory)?;
        args.model.memory.measured_rates = Some(super::cost_rates::measure(&args.model.memory, pattern)?);
    }
    let variants = match (args.versus.take(), args.versus_residency.take()) {
        (None, None) => {
            let run = measure(&args.model, args.tokens)?;
            report::print_run(&run, args.json, None);
            return Ok(());
        }
        (Some(versus), None) => {
            let Some(first) = args.model.memory.trunk.clone() else {
                return Err(input_error(
                    "--versus DIR compares two packed trunks: give the first with --trunk DIR".into(),
                ));
            };
            [Variant::Trunk(first), Variant::Trunk(versus)]
        }
        (None, Some(rule)) => [Variant::Residency(args.model.memory.residency.clone()), Variant::Residency(rule)],
        (Some(_), Some(_)) => return Err(input_error("give --versus DIR or --versus-residency RULE, not both".into())),
    };
    let mut runs: [Vec<VersusRun>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds.max(1) {
        // Alternate the order, so a drive that warms up or slows down favours neither.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            variants[which].apply(&mut args.model);
            let dropped = drop_page_cache();
            let run = measure(&args.model, args.tokens)?;
            let variant = variants[which].label();
            report::print_run(&run, args.json, Some(&format!("round {}, {variant}", round + 1)));
            runs[which].push(VersusRun { run, variant, page_cache_dropped: dropped });
        }
    }
    let comparison = Comparison::of([variants[0].label(), variants[1].label()], runs);
    report::print_comparison(&comparison, args.json);
    Ok(())
}

/// What the two sides of a comparison differ in.
enum Variant {
    /// Another packed trunk.
    Trunk(std::path::PathBuf),
    /// The same trunk under another `--residency` rule.
    Residency(String),
}

impl Variant {
    fn apply(&self, model: &mut ModelArgs) {
        match self {
            Variant::Trunk(dir) => model.memory.trunk = Some(dir.clone()),
            Variant::Residency(rule) => model.memory.residency = rule.clone(),
        }
    }

    fn label(&self) -> String {
        match self {
            Variant::Trunk(dir) => dir.display().to_string(),
            Variant::Residency(rule) => format!("--residency {rule}"),
        }
    }
}

/// Tries to drop the page cache before a measured run (needs root); whether it did.
fn drop_page_cache() -> bool {
    let synced = std::process::Command::new("sync").status().is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}
