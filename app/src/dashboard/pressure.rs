//! The memory-pressure guard: whether other programs are squeezing memory below what the
//! plan still needs, and which smaller preset would step out of their way.
//!
//! Owns: [`assess`] (a pure rule over numbers, unit-tested) and [`PressureWarning`].
//! Must not: act: the window shows the warning and the user chooses the step-down.
//! The rule: the plan may still grow by `plan − RSS` (slots not yet filled); the spare
//! memory is `MemAvailable` less that growth. Below [`min_spare_bytes`], or when the
//! system's own pressure reading is high (`MemoryPressure::is_high`: PSI `some avg10` at
//! 10 % or more on Linux, a warning or critical level on macOS, a commit charge at 90 % or
//! more on Windows), the guard warns, before the system swaps or the OOM killer acts.

use k3_io::pressure::MemoryPressure;
use k3_plan::{plan_memory, BudgetChoice, Footprint, MachineMemory, MemoryRequest, Preset, GB};

/// Spare memory below which the guard warns: 1 GB or 2 % of the machine, the larger.
pub fn min_spare_bytes(machine: MachineMemory) -> u64 {
    (GB).max(machine.usable_total_bytes() / 50)
}

/// What the window shows when memory runs short.
#[derive(Debug, Clone, PartialEq)]
pub struct PressureWarning {
    pub available_bytes: u64,
    /// Memory the plan may still take (plan − RSS).
    pub plan_growth_bytes: u64,
    /// Available − growth (negative: short by that much).
    pub spare_bytes: f64,
    pub min_spare_bytes: u64,
    /// PSI `some avg10` (Linux), when that is the system's measure.
    pub pressure_avg10: Option<f64>,
    /// The system's own pressure reading in words, when it is high.
    pub pressure: Option<String>,
    /// The largest preset that leaves enough spare memory, if any.
    pub step_down: Option<String>,
    pub step_down_plan_bytes: Option<u64>,
}

/// What the guard looks at.
#[derive(Debug, Clone)]
pub struct PressureInput<'a> {
    pub machine: MachineMemory,
    pub pressure: Option<MemoryPressure>,
    pub rss_bytes: u64,
    pub plan_bytes: u64,
    pub footprint: &'a Footprint,
    pub streamed_trunk: bool,
    pub context_length: u64,
    pub io_threads: u64,
}

/// `None` when memory is fine; else the warning with a step-down preset when one helps.
pub fn assess(input: &PressureInput<'_>) -> Option<PressureWarning> {
    let available = input.machine.usable_available_bytes();
    if available == 0 {
        return None; // unknown, never a false alarm
    }
    let growth = input.plan_bytes.saturating_sub(input.rss_bytes);
    let spare = available as f64 - growth as f64;
    let min_spare = min_spare_bytes(input.machine);
    let squeezed = spare < min_spare as f64;
    let stalling = input.pressure.is_some_and(|p| p.is_high());
    if !squeezed && !stalling {
        return None;
    }
    // A smaller plan frees (plan − smaller); it must bring the spare back above the minimum.
    let shortfall = (min_spare as f64 - spare).max(0.0) as u64;
    let ceiling = input.plan_bytes.saturating_sub(shortfall.max(1));
    let step_down = step_down_preset(input, ceiling);
    Some(PressureWarning {
        available_bytes: available,
        plan_growth_bytes: growth,
        spare_bytes: spare,
        min_spare_bytes: min_spare,
        pressure_avg10: input.pressure.and_then(|p| p.stall_percent()),
        pressure: input.pressure.filter(|p| p.is_high()).map(|p| p.describe()),
        step_down: step_down.map(|(p, _)| p.name().to_string()),
        step_down_plan_bytes: step_down.map(|(_, bytes)| bytes),
    })
}

/// The fixed preset with the largest plan strictly at or under `ceiling` bytes.
fn step_down_preset(input: &PressureInput<'_>, ceiling: u64) -> Option<(Preset, u64)> {
    Preset::ALL
        .into_iter()
        .filter(|p| !matches!(p.choice(), BudgetChoice::Auto))
        .filter_map(|p| {
            let req = MemoryRequest {
                choice: p.choice(),
                streamed_trunk: input.streamed_trunk,
                context_length: input.context_length,
                io_threads: input.io_threads,
            };
            let plan = plan_memory(input.footprint, &req, input.machine, false).ok()?;
            (plan.total_bytes <= ceiling).then_some((p, plan.total_bytes))
        })
        .max_by_key(|(_, bytes)| *bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(fp: &Footprint, available: u64, rss: u64, plan: u64, psi: Option<f64>) -> PressureInput<'_> {
        PressureInput {
            machine: MachineMemory::new(64 * GB, available),
            pressure: psi.map(MemoryPressure::StallPercent),
            rss_bytes: rss,
            plan_bytes: plan,
            footprint: fp,
            streamed_trunk: true,
            context_length: 4096,
            io_threads: 4,
        }
    }

    #[test]
    fn enough_spare_memory_and_no_stalls_is_no_warning() {
        let fp = k3_plan::released_footprint();
        assert_eq!(assess(&input(&fp, 20 * GB, 8 * GB, 10 * GB, Some(0.5))), None);
    }

    #[test]
    fn a_squeeze_below_the_plans_growth_warns_with_a_preset_that_fits() {
        let fp = k3_plan::released_footprint();
        // The workstation plan (~96 GB) has 40 GB in RAM and 50 GB still to come, but only
        // 30 GB is available: short by 20 GB plus the minimum spare.
        let plan = 96 * GB;
        let w = assess(&input(&fp, 30 * GB, 46 * GB, plan, None)).expect("a warning");
        assert_eq!(w.plan_growth_bytes, 50 * GB);
        assert!(w.spare_bytes < 0.0);
        let bytes = w.step_down_plan_bytes.expect("a smaller preset");
        assert!(bytes + (w.min_spare_bytes as f64 - w.spare_bytes) as u64 <= plan, "it frees enough");
        assert_eq!(w.step_down.as_deref(), Some("desktop"), "the largest preset under the ceiling");
    }

    #[test]
    fn stalls_alone_warn_and_nothing_smaller_than_ultra_is_offered() {
        let fp = k3_plan::released_footprint();
        let total = |preset: Preset| {
            let req =
                MemoryRequest { choice: preset.choice(), streamed_trunk: true, context_length: 4096, io_threads: 4 };
            plan_memory(&fp, &req, MachineMemory::new(64 * GB, 40 * GB), false).unwrap().total_bytes
        };
        let (ultra, laptop) = (total(Preset::Ultra), total(Preset::Laptop));
        let w = assess(&input(&fp, 40 * GB, laptop, laptop, Some(25.0))).expect("PSI warns");
        assert_eq!(w.pressure_avg10, Some(25.0));
        assert_eq!(w.step_down.as_deref(), Some("ultra"), "below laptop, ultra");
        let w = assess(&input(&fp, 40 * GB, ultra, ultra, Some(25.0))).expect("PSI warns");
        assert_eq!(w.step_down, None, "ultra is the smallest preset");
    }

    /// macOS's level and Windows' commit charge warn as PSI does, each by its own rule.
    #[test]
    fn a_macos_pressure_level_or_a_windows_commit_charge_warns_by_its_own_rule() {
        use k3_io::pressure::PressureLevel;
        let fp = k3_plan::released_footprint();
        let with =
            |p: MemoryPressure| PressureInput { pressure: Some(p), ..input(&fp, 40 * GB, 8 * GB, 10 * GB, None) };
        assert_eq!(assess(&with(MemoryPressure::Level(PressureLevel::Normal))), None);
        let w = assess(&with(MemoryPressure::Level(PressureLevel::Critical))).expect("critical warns");
        assert_eq!(w.pressure.as_deref(), Some("critical (macOS memory pressure)"));
        assert_eq!(w.pressure_avg10, None, "a level is not a PSI figure");
        assert_eq!(assess(&with(MemoryPressure::CommitPercent(50.0))), None);
        let w = assess(&with(MemoryPressure::CommitPercent(95.0))).expect("a commit charge near its limit warns");
        assert_eq!(w.pressure.as_deref(), Some("95% of the commit limit in use"));
    }

    #[test]
    fn unknown_memory_never_warns() {
        let fp = k3_plan::released_footprint();
        assert_eq!(assess(&input(&fp, 0, 1, 100 * GB, None)), None);
    }
}
