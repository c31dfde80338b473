//! `k3 plan`: the memory plan for a budget, computed from a checkpoint's headers alone, from
//! a footprint file, or for the released K3; on this machine's memory figures or on given
//! ones. `--json` prints k3-plan-wasm's schema, which the wasm planner answers in too, so
//! `cli/tests/plan_wasm.rs` can require both to agree field for field.
//!
//! Owns: making the plan ([`subject`]: what it is made for; [`cost`]: the cost rule's time
//! model); [`report`] prints it, [`residency`] names its layers.

mod cost;
mod report;
mod residency;
mod subject;

use k3_engine::tools::{make_plan, CodedLayout};
use k3_plan::{auto_budget_for, BudgetChoice, ResidencyRule};
use k3_plan_wasm::api::check_ranges;
use k3_plan_wasm::dto::{ErrorJson, FootprintJson, PlanContext, PlanJson};

use super::{input_error, memory_options, Failure};
use crate::args::PlanArgs;
pub(super) use residency::residency_runs;
use subject::{machine, subject};

pub fn plan(args: PlanArgs) -> Result<(), Failure> {
    let (fp, streamed, coded) = subject(&args)?;
    if args.print_footprint {
        let text =
            serde_json::to_string(&FootprintJson::from(&fp)).map_err(|e| input_error(format!("footprint: {e}")))?;
        outln!("{text}");
        return Ok(());
    }
    let mut opts = memory_options(&args.memory)?;
    opts.check_available = false;
    let Some(choice) = opts.budget else {
        return Err(input_error("give --preset P or --trunk-budget/--cache-budget".into()));
    };
    let machine = machine(&args)?;
    // The engine refuses these with its own message below; the JSON names them as the
    // wasm planner does.
    if let (true, Err(e)) = (args.json, check_ranges(opts.context_length as u64, opts.io_threads as u64)) {
        report::print_refusal(&e);
    }
    let coded_layers = coded.as_ref().map(CodedLayout::layers);
    let p = match make_plan(&fp, choice, (streamed, coded_layers), &opts, machine) {
        Ok(p) => p,
        Err(k3_engine::Error::Budget(e)) => {
            if args.json {
                report::print_refusal(&ErrorJson::from(&e));
            }
            return Err(k3_engine::Error::Budget(e).into());
        }
        Err(e) => return Err(e.into()),
    };
    let budget = match choice {
        BudgetChoice::Fixed(b) => b,
        BudgetChoice::Auto => auto_budget_for(&fp, machine, opts.context_length as u64)
            .map_err(|e| Failure::from(k3_engine::Error::Budget(e)))?,
    };
    let cx = PlanContext {
        footprint: &fp,
        choice,
        budget,
        trunk_streamed: streamed,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
        machine,
    };
    let v = PlanJson::new(&p, &cx);
    let costs = match opts.residency {
        ResidencyRule::ByCost(rates) => Some(cost::cost_comparison(&fp, (&p, &cx), &opts, (rates, coded_layers))?),
        ResidencyRule::Prefix => None,
    };
    if args.json {
        report::print_json(&p, &v, costs.as_ref());
    } else {
        report::print_text(&p, &v, &fp, opts.context_length, costs.as_ref());
    }
    Ok(())
}
