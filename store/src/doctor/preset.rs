//! Which preset to recommend, by the planner's own rules.
//!
//! Owns: [`recommend_preset`]: the largest named preset whose plan `k3_plan::plan_memory`
//! accepts on this machine *and* leaves `auto`'s headroom free (PRODUCT.md §4.6: a preset
//! whose peak RSS equals MemAvailable has no headroom), else `auto` when `auto` fits, else none.
//! Must not: size anything itself: budgets, plans and the headroom are `k3_plan`'s.

use k3_plan::{
    auto_budget_for, auto_headroom, plan_memory, Budget, Footprint, MachineMemory, MemoryRequest, PlanError, Preset,
};

/// How the engine would run: streamed trunk, its default context and I/O threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    pub context_length: u64,
    pub io_threads: u64,
}

/// The named presets, largest first.
const LARGEST_FIRST: [Preset; 5] = [Preset::Max, Preset::Server, Preset::Workstation, Preset::Desktop, Preset::Laptop];

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

/// The largest named preset that fits with headroom, else `auto` if it fits, else `None`.
pub fn recommend_preset(fp: &Footprint, machine: MachineMemory, shape: RunShape) -> Option<Recommendation> {
    let room = machine.usable_available_bytes().saturating_sub(auto_headroom(machine));
    let plan_of = |preset: Preset| {
        let req = MemoryRequest {
            choice: preset.choice(),
            streamed_trunk: true,
            context_length: shape.context_length,
            io_threads: shape.io_threads,
        };
        plan_memory(fp, &req, machine, true).ok().map(|p| Recommendation { preset, plan_bytes: p.total_bytes })
    };
    LARGEST_FIRST.into_iter().filter_map(plan_of).find(|r| r.plan_bytes <= room).or_else(|| plan_of(Preset::Auto))
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
        let laptop = (1..200).find(|&gb| on(gb) == Some(Preset::Laptop)).unwrap();
        let auto_only = (1..200).find(|&gb| on(gb) == Some(Preset::Auto)).unwrap();
        assert!(auto_only < laptop, "auto fits on less memory than laptop ({auto_only} vs {laptop} GB)");
    }
}
