//! `k3 plan --residency cost`: the cost plan's time model next to the prefix plan's for the
//! same budgets ([`CostComparison`], a typed result: `--json`'s `cost` is derived from it),
//! and its two lines of text.

use k3_plan::{cost_of, plan_memory_by, BudgetChoice, CostFigures, Footprint, ResidencyRule};
use k3_plan_wasm::dto::PlanContext;
use serde::Serialize;

use crate::commands::Failure;

/// The time model's figures of one plan.
#[derive(Serialize)]
pub(super) struct Figures {
    seconds_per_token: f64,
    io_seconds: f64,
    compute_seconds: f64,
    decode_seconds: f64,
    overlapped: bool,
}

impl From<CostFigures> for Figures {
    fn from(f: CostFigures) -> Self {
        Figures {
            seconds_per_token: f.seconds_per_token,
            io_seconds: f.io_seconds,
            compute_seconds: f.compute_seconds,
            decode_seconds: f.decode_seconds,
            overlapped: f.overlapped,
        }
    }
}

/// The cost plan's time model next to the prefix plan's (`None`: the prefix plan of the
/// same budgets does not fit).
#[derive(Serialize)]
pub(super) struct CostComparison {
    chosen: Figures,
    prefix: Option<Figures>,
}

impl CostComparison {
    pub(super) fn print(&self) {
        let line = |f: &Figures| {
            format!(
                "{:.3} s/token (drive {:.3} s {} compute {:.3} s, of which decoding {:.3} s)",
                f.seconds_per_token,
                f.io_seconds,
                if f.overlapped { "overlapped with" } else { "then" },
                f.compute_seconds,
                f.decode_seconds
            )
        };
        outln!("forecast by cost: {}", line(&self.chosen));
        match &self.prefix {
            Some(p) => outln!(
                "the prefix plan of the same budgets: {} → by cost is {:.2} × as fast",
                line(p),
                p.seconds_per_token / self.chosen.seconds_per_token.max(1e-12)
            ),
            None => outln!("the prefix plan of the same budgets: does not fit"),
        }
    }
}

pub(super) fn cost_comparison(
    fp: &Footprint,
    (p, cx): (&k3_plan::MemoryPlan, &PlanContext),
    opts: &k3_engine::MemoryOptions,
    (rates, coded): (k3_plan::CostRates, Option<k3_plan::CodedLayers>),
) -> Result<CostComparison, Failure> {
    let chosen =
        cost_of(fp, p, &rates, coded, cx.trunk_streamed).map_err(|e| Failure::from(k3_engine::Error::Budget(e)))?;
    let request = k3_plan::MemoryRequest {
        choice: BudgetChoice::Fixed(cx.budget),
        streamed_trunk: cx.trunk_streamed,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
    };
    let prefix = plan_memory_by(fp, &request, cx.machine, false, (ResidencyRule::Prefix, coded))
        .ok()
        .map(|q| cost_of(fp, &q, &rates, coded, cx.trunk_streamed))
        .transpose()
        .map_err(|e| Failure::from(k3_engine::Error::Budget(e)))?;
    Ok(CostComparison { chosen: chosen.into(), prefix: prefix.map(Figures::from) })
}
