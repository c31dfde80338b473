//! What `k3 forecast` prints, as data: one entry per preset (and the custom budget), each
//! a plan with its forecast or the planner's refusal. A leaf the gathering (`forecast`),
//! the text (`forecast_out`, `forecast_notes`) and the JSON (`forecast_json`) share.
//!
//! Owns: [`Entry`], [`Planned`], [`Report`].

use k3_engine::tools::DecodeRates;
use k3_plan::{Budget, Forecast, MachineMemory, MemoryPlan, PlanError};

use super::forecast_disk::Disk;
use super::forecast_inputs::{Coding, Subject};

/// One row of the forecast: a preset or the custom budget.
pub struct Entry {
    pub name: String,
    /// The budgets planned for (`auto`'s as resolved on this machine), when known.
    pub budget: Option<Budget>,
    pub outcome: Result<Planned, PlanError>,
}

/// A plan and its forecast.
pub struct Planned {
    pub plan: MemoryPlan,
    pub forecast: Forecast,
    /// `MemAvailable` (capped by the cgroup); `None` when unknown.
    pub available: Option<u64>,
}

impl Planned {
    /// Available memory minus the plan's total (negative: short by that much).
    pub fn headroom(&self) -> Option<i128> {
        self.available.map(|a| a as i128 - self.plan.total_bytes as i128)
    }

    /// The planner's refusal for a plan beyond what this machine has available.
    pub fn shortfall(&self) -> Option<PlanError> {
        let available = self.available?;
        (self.plan.total_bytes > available)
            .then_some(PlanError::ExceedsAvailable { needed_bytes: self.plan.total_bytes, available_bytes: available })
    }
}

/// Everything `k3 forecast` prints.
pub struct Report {
    pub subject: Subject,
    pub disk: Disk,
    pub compute: DecodeRates,
    pub machine: MachineMemory,
    pub context_length: u64,
    pub io_threads: u64,
    /// A coded packed trunk's read sizes and decode rate.
    pub coding: Option<Coding>,
    pub entries: Vec<Entry>,
}
