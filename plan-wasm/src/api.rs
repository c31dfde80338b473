//! The calls the page makes, as functions from JSON bytes to a JSON string, so they are
//! tested natively and exported to wasm unchanged ([`crate::exports`]).
//!
//! Owns: [`plan_call`] (one choice → its plan, or the refusal), [`presets_call`] (every
//! preset, plus a custom budget when given, each with its plan or refusal) and
//! [`released_footprint_call`]; the request checks `k3 plan` makes before planning
//! (context length and I/O threads in range), so both refuse the same requests.
//! Must not: plan anything itself: every figure is `k3_plan::plan_memory`'s (and
//! `k3_plan::forecast`'s); `k3 plan --json` prints the same [`PlanJson`].

use k3_plan::{
    auto_budget_for, plan_memory, released_footprint, BudgetChoice, Footprint, ForecastInput, MachineMemory,
    MemoryRequest, PlanError, Preset, MAX_CONTEXT, MAX_IO_THREADS,
};
use serde::{Deserialize, Serialize};

use crate::dto::{
    BudgetJson, ChoiceJson, ErrorDetail, ErrorJson, FootprintJson, ForecastJson, MachineJson, PlanContext, PlanJson,
    RatesJson,
};

/// Input of [`plan_call`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanCall {
    pub footprint: FootprintJson,
    pub machine: MachineJson,
    pub choice: ChoiceJson,
    #[serde(flatten)]
    pub options: Options,
}

/// Input of [`presets_call`]: every preset, and `custom` too when given.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetsCall {
    pub footprint: FootprintJson,
    pub machine: MachineJson,
    #[serde(default)]
    pub custom: Option<BudgetJson>,
    #[serde(flatten)]
    pub options: Options,
}

/// What every plan of a call shares.
#[derive(Debug, Clone, Copy, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "PlanOptions"))]
pub struct Options {
    /// A packed trunk exists: unpinned layers stream through the ring.
    pub streamed_trunk: bool,
    pub context_length: u64,
    pub io_threads: u64,
    /// With rates, each plan comes with its speed forecast.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub rates: Option<RatesJson>,
}

/// A plan with its forecast (when rates were given), or the refusal.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Outcome {
    Plan {
        plan: Box<PlanJson>,
        #[serde(skip_serializing_if = "Option::is_none")]
        forecast: Option<ForecastJson>,
    },
    Error {
        error: ErrorJson,
    },
}

/// One row of [`presets_call`]: the preset's name (or `custom`) and its outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub preset: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize)]
struct Rows {
    presets: Vec<Row>,
}

/// `{"plan": …, "forecast"?: …}` or `{"error": …}` for one choice.
pub fn plan_call(input: &[u8]) -> String {
    match serde_json::from_slice::<PlanCall>(input) {
        Ok(call) => {
            let fp = Footprint::from(call.footprint);
            let outcome = match call.choice.choice() {
                Ok(choice) => outcome(&fp, call.machine.into(), choice, call.options),
                Err(e) => Outcome::Error { error: ErrorJson::from(&e) },
            };
            to_json(&outcome)
        }
        Err(e) => bad_request(&e),
    }
}

/// `{"presets": [{"preset": "laptop", "plan": …} | {"preset": …, "error": …}, …]}`: every
/// preset in [`Preset::ALL`]'s order, then `custom` when the call gives it.
pub fn presets_call(input: &[u8]) -> String {
    match serde_json::from_slice::<PresetsCall>(input) {
        Ok(call) => {
            let fp = Footprint::from(call.footprint);
            let machine = MachineMemory::from(call.machine);
            let mut choices: Vec<(String, BudgetChoice)> =
                Preset::ALL.iter().map(|p| (p.name().to_string(), p.choice())).collect();
            if let Some(c) = call.custom {
                let budget = k3_plan::Budget { trunk_bytes: c.trunk_bytes, cache_bytes: c.cache_bytes };
                choices.push(("custom".to_string(), BudgetChoice::Fixed(budget)));
            }
            let presets = choices
                .into_iter()
                .map(|(preset, choice)| Row { preset, outcome: outcome(&fp, machine, choice, call.options) })
                .collect();
            to_json(&Rows { presets })
        }
        Err(e) => bad_request(&e),
    }
}

/// The released K3's footprint ([`released_footprint`]) as [`FootprintJson`].
pub fn released_footprint_call() -> String {
    to_json(&FootprintJson::from(&released_footprint()))
}

/// The plan for `choice` as `k3 plan` makes it: the options checked, `auto` resolved on
/// `machine`, never refused for exceeding what is available (`fits` says it instead).
pub fn outcome(fp: &Footprint, machine: MachineMemory, choice: BudgetChoice, options: Options) -> Outcome {
    match planned(fp, machine, choice, options) {
        Ok(outcome) => outcome,
        Err(error) => Outcome::Error { error },
    }
}

fn planned(fp: &Footprint, machine: MachineMemory, choice: BudgetChoice, o: Options) -> Result<Outcome, ErrorJson> {
    check_ranges(o.context_length, o.io_threads)?;
    let req = MemoryRequest {
        choice,
        streamed_trunk: o.streamed_trunk,
        context_length: o.context_length,
        io_threads: o.io_threads,
    };
    let plan = plan_memory(fp, &req, machine, false).map_err(|e| ErrorJson::from(&e))?;
    let budget = match choice {
        BudgetChoice::Fixed(b) => b,
        BudgetChoice::Auto => auto_budget_for(fp, machine, o.context_length).map_err(|e| ErrorJson::from(&e))?,
    };
    let cx = PlanContext {
        footprint: fp,
        choice,
        budget,
        trunk_streamed: o.streamed_trunk,
        context_length: o.context_length,
        io_threads: o.io_threads,
        machine,
    };
    let forecast = match o.rates {
        Some(rates) => {
            let input = ForecastInput {
                footprint: fp,
                plan: &plan,
                trunk_streamed: o.streamed_trunk,
                disk: rates.disk(),
                rates: rates.compute(),
                coding: None,
            };
            let f = k3_plan::forecast(&input)
                .map_err(|e| ErrorJson::new(ErrorDetail::Forecast, format!("forecast: {e}")))?;
            Some(ForecastJson::from(&f))
        }
        None => None,
    };
    Ok(Outcome::Plan { plan: Box::new(PlanJson::new(&plan, &cx)), forecast })
}

/// The ranges the engine's `MemoryOptions::validate` enforces on a plan's options, as the
/// refusal `k3 plan --json` prints too.
pub fn check_ranges(context_length: u64, io_threads: u64) -> Result<(), ErrorJson> {
    if context_length == 0 || context_length > MAX_CONTEXT {
        let e = PlanError::ContextLength { requested: context_length, maximum: MAX_CONTEXT };
        return Err(ErrorJson::from(&e));
    }
    if io_threads == 0 || io_threads > MAX_IO_THREADS {
        let detail = ErrorDetail::IoThreads { requested: io_threads, maximum: MAX_IO_THREADS };
        let message = format!("io_threads {io_threads} is not between 1 and {MAX_IO_THREADS}");
        return Err(ErrorJson::new(detail, message));
    }
    Ok(())
}

fn bad_request(e: &serde_json::Error) -> String {
    to_json(&Outcome::Error { error: ErrorJson::new(ErrorDetail::BadRequest, format!("bad request: {e}")) })
}

/// Serialises one of this module's outputs. They hold only numbers, strings, options and
/// vectors, which serde_json always writes; the fallback is there because nothing panics here.
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        let error = serde_json::json!({ "kind": "BadRequest", "message": format!("serialising: {e}") });
        serde_json::json!({ "error": error }).to_string()
    })
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
