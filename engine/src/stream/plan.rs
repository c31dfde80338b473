//! Turns the engine's memory options into its memory plan.
//!
//! Owns: measuring the footprint, reading the machine (`io::sysinfo`), and calling
//! `k3_plan::plan_sequences` for the options' live sequences under their residency rule, which decides everything;
//! its refusals become `Error::Budget` with the planner's numbers; and the context a model
//! opens at when its user names none ([`fitted_context`], by `k3_plan::default_context`).
//! Must not: compute any size itself: presets, `auto`, slot sizes, overheads, the KV
//! reservation and each layer's residency are all `k3_plan`'s, so the CLI, the app and the
//! wasm planner agree. A coded trunk's stored sizes and staging bytes come from its manifest.

use k3_plan::{
    default_context, plan_sequences, Budget, BudgetChoice, CodedLayers, Footprint, MachineMemory, MemoryPlan,
    MemoryRequest, RunShape, BASE_CONTEXT,
};

use crate::error::Result;
use crate::options::MemoryOptions;

/// The plan for `choice`, checked against `machine` when `opts.check_available`; `coded`
/// is a coded trunk's layout ([`crate::stream::trunk_manifest::PackedTrunk::coded_layout`]).
pub fn make_plan(
    fp: &Footprint,
    choice: BudgetChoice,
    (streamed_trunk, coded): (bool, Option<CodedLayers>),
    opts: &MemoryOptions,
    machine: MachineMemory,
) -> Result<MemoryPlan> {
    opts.validate()?;
    let req = MemoryRequest {
        choice,
        streamed_trunk,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
    };
    let sequences = opts.sequences as u64;
    Ok(plan_sequences(fp, &req, machine, opts.check_available, (opts.residency, coded, sequences))?)
}

/// The context a model opens at when its user names none ([`MemoryOptions::fit_context`]):
/// the largest, up to the 1 M window, at which `opts`' plan keeps its trunk and cache (with
/// no budget, every weight) and leaves `auto`'s headroom free on `machine` — the figure the
/// wizard, Settings › Memory, `k3 plan` and `k3 doctor` show as the preset's default
/// context. When no context does, [`BASE_CONTEXT`], whose plan then refuses naming the
/// bytes it lacks.
pub fn fitted_context(fp: &Footprint, opts: &MemoryOptions, machine: MachineMemory) -> usize {
    let unlimited = BudgetChoice::Fixed(Budget { trunk_bytes: u64::MAX, cache_bytes: u64::MAX });
    let choice = opts.budget.unwrap_or(unlimited);
    let shape = RunShape { streamed_trunk: opts.trunk_dir.is_some(), io_threads: opts.io_threads as u64 };
    let fp = fp.for_sequences(opts.sequences as u64);
    let positions = default_context(&fp, choice, shape, machine).unwrap_or(BASE_CONTEXT);
    usize::try_from(positions).unwrap_or(crate::options::MAX_CONTEXT)
}

#[cfg(test)]
mod tests {
    use k3_plan::{released_footprint, Preset, GB};

    use super::*;

    fn streamed(preset: Preset) -> MemoryOptions {
        MemoryOptions { budget: Some(preset.choice()), trunk_dir: Some("trunk".into()), ..MemoryOptions::resident() }
    }

    #[test]
    fn the_fitted_context_is_the_presets_default_context() {
        let (fp, machine) = (released_footprint(), MachineMemory::new(16 * GB, 14 * GB));
        let shape = RunShape { streamed_trunk: true, io_threads: 4 };
        for preset in [Preset::Ultra, Preset::Laptop] {
            let want = default_context(&fp, preset.choice(), shape, machine).expect("fits");
            assert_eq!(fitted_context(&fp, &streamed(preset), machine) as u64, want, "{preset:?}");
            assert!(want > 16_384, "{preset:?}: {want}");
        }
    }

    #[test]
    fn kept_conversations_share_the_room_of_the_fitted_context() {
        let (fp, machine) = (released_footprint(), MachineMemory::new(16 * GB, 14 * GB));
        let one = fitted_context(&fp, &streamed(Preset::Laptop), machine);
        let three = fitted_context(&fp, &MemoryOptions { sequences: 3, ..streamed(Preset::Laptop) }, machine);
        assert!(three < one / 2, "three kept conversations: {three} positions each, one: {one}");
    }

    #[test]
    fn a_model_whose_weights_do_not_fit_gets_the_base_context() {
        // Released K3 with every weight resident on a 16 GB machine.
        let (fp, machine) = (released_footprint(), MachineMemory::new(16 * GB, 14 * GB));
        let resident = MemoryOptions::resident();
        assert_eq!(fitted_context(&fp, &resident, machine) as u64, BASE_CONTEXT);
    }
}
