//! Which preset to recommend, by the planner's own rules.
//!
//! Owns: [`recommend_preset`]: `k3_plan::recommend` at the doctor's run shape — the largest
//! named preset whose plan fits this machine *and* leaves `auto`'s headroom free (PRODUCT.md
//! §4.6: a preset whose peak RSS equals MemAvailable has no headroom), else `auto` when
//! `auto` fits, else none.
//! Must not: size anything itself: budgets, plans and the headroom are `k3_plan`'s.

use k3_plan::{auto_budget_for, Budget, Footprint, MachineMemory, PlanError, Preset};

/// How the engine would run: streamed trunk, its default context and I/O threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    pub context_length: u64,
    pub io_threads: u64,
}

/// The `auto` budget on `machine`, or why it refuses.
pub fn auto_budget(fp: &Footprint, machine: MachineMemory, shape: RunShape) -> Result<Budget, PlanError> {
    auto_budget_for(fp, machine, shape.context_length)
}

/// A preset and the memory its plan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recommendation {
    pub preset: Preset,
    /// The plan's total (budgets, fixed needs, I/O buffers).
    pub plan_bytes: u64,
}

/// The largest named preset that fits with headroom, else `auto` if it fits, else `None`:
/// `k3_plan::recommend`, the one answer every front end gives.
pub fn recommend_preset(fp: &Footprint, machine: MachineMemory, shape: RunShape) -> Option<Recommendation> {
    let run = k3_plan::RunShape { streamed_trunk: true, io_threads: shape.io_threads };
    let rows = k3_plan::advise_presets(fp, run, machine, Some(shape.context_length));
    let preset = k3_plan::recommend(&rows)?;
    let advice = rows.into_iter().find(|(p, _)| *p == preset).and_then(|(_, a)| a.ok())?;
    Some(Recommendation { preset, plan_bytes: advice.plan.total_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::released::footprint;
    use k3_plan::GB;

    const SHAPE: RunShape = RunShape { context_length: 4096, io_threads: 4 };

    fn on(available_gb: u64) -> Option<Preset> {
        let machine = MachineMemory::new(available_gb * GB + GB, available_gb * GB);
        let r = recommend_preset(&footprint(), machine, SHAPE)?;
        assert!(r.plan_bytes <= machine.available_bytes, "{r:?} on {available_gb} GB");
        Some(r.preset)
    }

    #[test]
    fn the_largest_preset_that_keeps_the_headroom_is_recommended() {
        assert_eq!(on(512), Some(Preset::Max));
        assert_eq!(on(160), Some(Preset::Server));
        assert_eq!(on(64), Some(Preset::Desktop), "workstation's 90 GB of budgets do not fit in 64");
        assert_eq!(on(2), None, "auto refuses");
        // Laptop plans 4.27 GB and ultra 1.73 GB (layers streamed in pieces through one
        // 484 MB slot): each is recommended from where it fits with `auto`'s headroom, ultra
        // below laptop, and nothing below ultra.
        let first = |p: Preset| (1..200).find(|&gb| on(gb) == Some(p)).unwrap();
        let (ultra, laptop) = (first(Preset::Ultra), first(Preset::Laptop));
        assert_eq!((ultra, laptop), (4, 7));
        assert!((ultra..laptop).all(|gb| on(gb) == Some(Preset::Ultra)), "between them, ultra");
        assert!((1..ultra).all(|gb| on(gb).is_none()), "below {ultra} GB nothing fits");
    }
}
