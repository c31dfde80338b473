//! How many conversations a plan keeps live at once: what each one costs and the largest
//! batch a machine holds (`k3 plan`, Settings › Memory, `k3 serve --batch`).
//!
//! Owns: the per-sequence cost (its recurrent state and its KV cache reserved for the whole
//! context), the largest count of live sequences whose plan fits the machine's usable
//! available memory ([`batch_fit`]), and the refusal of a plan with more sequences than that
//! ([`plan_sequences`], [`PlanError::BatchTooLarge`]).
//! Must not: plan differently from [`plan_memory_by`]: a batch's plan is the one-sequence
//! plan of [`Footprint::for_sequences`], so its total grows by exactly
//! [`BatchFit::per_sequence_bytes`] per sequence (the weights, cache and scratch are
//! shared; the rows of one batched step stay within the prefill chunk's scratch).
//! Easy to break: `auto` sizes its budgets from the machine and the footprint, so its batch
//! is taken with the budgets `auto` gives one sequence, held fixed (as
//! [`crate::default_context`] does with the context).

use crate::advice::RunShape;
use crate::auto::auto_budget_for;
use crate::error::PlanError;
use crate::machine::MachineMemory;
use crate::memory::{plan_memory_by, Footprint, MemoryPlan, MemoryRequest, ResidencyRule};
use crate::presets::BudgetChoice;
use crate::CodedLayers;

/// The most sequences one plan may keep live (decoding together, or kept between turns).
pub const MAX_SEQUENCES: u64 = 64;

/// What a choice's plan gives to concurrent conversations on one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFit {
    /// What each live sequence adds: its recurrent state and its KV cache at the context.
    pub per_sequence_bytes: u64,
    /// The plan's total with one sequence.
    pub one_sequence_bytes: u64,
    /// The most sequences (up to [`MAX_SEQUENCES`]) whose plan fits the usable available
    /// memory; 0 when even one does not.
    pub largest: u64,
    /// Rows one batched step may carry: the plan's prefill chunk, whose scratch the plan
    /// already counts (each live sequence's decode step is one row).
    pub rows_per_step: u64,
}

impl BatchFit {
    /// The plan's total with `n` live sequences (saturating).
    pub fn total_bytes(&self, n: u64) -> u64 {
        self.per_sequence_bytes.saturating_mul(n.saturating_sub(1)).saturating_add(self.one_sequence_bytes)
    }
}

/// `choice` as a budget that does not move with the number of sequences: `auto` sized for
/// one sequence at `context_length`, a fixed choice as it is.
fn budget_held(
    fp: &Footprint,
    choice: BudgetChoice,
    machine: MachineMemory,
    context_length: u64,
) -> Result<BudgetChoice, PlanError> {
    match choice {
        BudgetChoice::Auto => Ok(BudgetChoice::Fixed(auto_budget_for(fp, machine, context_length)?)),
        fixed => Ok(fixed),
    }
}

/// What `choice`'s plan at `context_length` gives concurrent conversations on `machine`
/// (`fp` is one sequence's footprint).
pub fn batch_fit(
    fp: &Footprint,
    choice: BudgetChoice,
    shape: RunShape,
    machine: MachineMemory,
    context_length: u64,
) -> Result<BatchFit, PlanError> {
    let held = budget_held(fp, choice, machine, context_length)?;
    let req = MemoryRequest {
        choice: held,
        streamed_trunk: shape.streamed_trunk,
        context_length,
        io_threads: shape.io_threads,
    };
    let one = plan_memory_by(fp, &req, machine, false, (ResidencyRule::Prefix, None))?;
    Ok(fit_of(fp, &one, machine, context_length))
}

/// The batch figures of a one-sequence plan `one` at `context_length`.
fn fit_of(fp: &Footprint, one: &MemoryPlan, machine: MachineMemory, context_length: u64) -> BatchFit {
    let per_sequence_bytes = fp.kv_bytes(context_length).saturating_add(fp.state_bytes);
    let available = machine.usable_available_bytes();
    let largest = match available.checked_sub(one.total_bytes) {
        None => 0,
        Some(spare) => spare.checked_div(per_sequence_bytes).unwrap_or(MAX_SEQUENCES).saturating_add(1),
    };
    BatchFit {
        per_sequence_bytes,
        one_sequence_bytes: one.total_bytes,
        largest: largest.min(MAX_SEQUENCES),
        rows_per_step: one.prefill_chunk,
    }
}

/// [`Footprint::for_sequences`] of `sequences`, refused as [`PlanError::Overflow`] where
/// the state or the KV bytes per position of them all pass 64 bits: saturated, the plan
/// would cost less than the batch needs (CI's fuzz campaign planned 4 × 2^62 bytes of
/// state as 2^64 - 1).
fn batch_footprint(fp: &Footprint, sequences: u64) -> Result<Footprint, PlanError> {
    fp.state_bytes.checked_mul(sequences).ok_or(PlanError::Overflow { what: "the batch's recurrent state" })?;
    fp.kv_bytes_per_position
        .checked_mul(sequences)
        .ok_or(PlanError::Overflow { what: "the batch's KV bytes per position" })?;
    Ok(fp.for_sequences(sequences))
}

/// The plan for `sequences` live sequences of `fp` (one sequence's footprint): as
/// [`plan_memory_by`] of [`Footprint::for_sequences`]. With `refuse_beyond_available`, more
/// than one sequence beyond what the machine has available is refused as
/// [`PlanError::BatchTooLarge`], naming each one's bytes and the largest batch that fits.
pub fn plan_sequences(
    fp: &Footprint,
    req: &MemoryRequest,
    machine: MachineMemory,
    refuse_beyond_available: bool,
    (rule, coded, sequences): (ResidencyRule, Option<CodedLayers>, u64),
) -> Result<MemoryPlan, PlanError> {
    if sequences == 0 || sequences > MAX_SEQUENCES {
        return Err(PlanError::Sequences { requested: sequences, maximum: MAX_SEQUENCES });
    }
    let many = batch_footprint(fp, sequences)?;
    match plan_memory_by(&many, req, machine, refuse_beyond_available, (rule, coded)) {
        Err(PlanError::ExceedsAvailable { needed_bytes, available_bytes }) if sequences > 1 => {
            let one = plan_memory_by(fp, req, machine, false, (rule, coded))?;
            let fit = fit_of(fp, &one, machine, req.context_length);
            Err(PlanError::BatchTooLarge {
                sequences,
                largest: fit.largest,
                per_sequence_bytes: fit.per_sequence_bytes,
                needed_bytes,
                available_bytes,
            })
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{plan_memory, released_footprint, Preset, GB};

    fn shape() -> RunShape {
        RunShape { streamed_trunk: true, io_threads: 4 }
    }

    fn request(preset: Preset, context_length: u64) -> MemoryRequest {
        MemoryRequest { choice: preset.choice(), streamed_trunk: true, context_length, io_threads: 4 }
    }

    #[test]
    fn each_sequence_adds_its_state_and_kv_and_the_largest_batch_is_the_last_that_fits() {
        let fp = released_footprint();
        let machine = MachineMemory::new(16 * GB, 12 * GB);
        let fit = batch_fit(&fp, Preset::Laptop.choice(), shape(), machine, 32_768).unwrap();
        assert_eq!(fit.per_sequence_bytes, fp.state_bytes + fp.kv_bytes_per_position * 32_768);
        assert!(fit.largest > 1 && fit.largest < MAX_SEQUENCES, "{fit:?}");
        for n in [1, fit.largest, fit.largest + 1] {
            let p = plan_memory(&fp.for_sequences(n), &request(Preset::Laptop, 32_768), machine, false).unwrap();
            assert_eq!(p.total_bytes, fit.total_bytes(n), "{n} sequences");
            assert_eq!(p.total_bytes <= machine.usable_available_bytes(), n <= fit.largest, "{n} sequences");
        }
        assert_eq!(
            fit.rows_per_step,
            plan_memory(&fp, &request(Preset::Laptop, 32_768), machine, false).unwrap().prefill_chunk
        );
    }

    #[test]
    fn a_batch_past_the_largest_is_refused_naming_the_bytes() {
        let fp = released_footprint();
        let machine = MachineMemory::new(16 * GB, 12 * GB);
        let fit = batch_fit(&fp, Preset::Laptop.choice(), shape(), machine, 32_768).unwrap();
        let rule = (ResidencyRule::Prefix, None, fit.largest);
        assert!(plan_sequences(&fp, &request(Preset::Laptop, 32_768), machine, true, rule).is_ok());
        let rule = (ResidencyRule::Prefix, None, fit.largest + 1);
        let err = plan_sequences(&fp, &request(Preset::Laptop, 32_768), machine, true, rule).unwrap_err();
        let PlanError::BatchTooLarge { sequences, largest, per_sequence_bytes, needed_bytes, available_bytes } = err
        else {
            panic!("{err:?}")
        };
        assert_eq!((sequences, largest, per_sequence_bytes), (fit.largest + 1, fit.largest, fit.per_sequence_bytes));
        assert_eq!(needed_bytes, fit.total_bytes(fit.largest + 1));
        assert_eq!(available_bytes, machine.usable_available_bytes());
        let text = err.to_string();
        assert!(text.contains(&format!("at most {} at once", fit.largest)), "{text}");
    }

    #[test]
    fn no_sequence_or_too_many_is_refused_and_a_machine_too_small_holds_no_batch() {
        let fp = released_footprint();
        let machine = MachineMemory::new(16 * GB, 12 * GB);
        for n in [0, MAX_SEQUENCES + 1] {
            let err =
                plan_sequences(&fp, &request(Preset::Laptop, 4096), machine, false, (ResidencyRule::Prefix, None, n));
            assert_eq!(err.unwrap_err(), PlanError::Sequences { requested: n, maximum: MAX_SEQUENCES });
        }
        let small = MachineMemory::new(2 * GB, GB);
        assert_eq!(batch_fit(&fp, Preset::Laptop.choice(), shape(), small, 4096).unwrap().largest, 0);
    }

    /// CI's fuzz campaign (plan_numbers): a footprint of nothing but a 2^62-byte state on a
    /// machine with 2^64 - 1 bytes available. Four sequences' state passes 64 bits;
    /// saturated, it planned at u64::MAX bytes, one sequence past the largest batch of 3.
    #[test]
    fn a_batch_whose_state_passes_64_bits_is_refused_not_planned_saturated() {
        let fp = Footprint {
            layer_trunk_bytes: Vec::new(),
            expert_bytes: 0,
            n_experts_total: 0,
            top_k: 0,
            moe_layers: 0,
            resident_bytes: 0,
            head_bytes: 0,
            embed_bytes: 0,
            vocab_rows: 0,
            state_bytes: 1 << 62,
            kv_bytes_per_position: 0,
            scratch_bytes: 0,
            layer_pieces: Vec::new(),
        };
        let machine = MachineMemory::new(u64::MAX, u64::MAX);
        let fixed = BudgetChoice::Fixed(crate::Budget { trunk_bytes: 0, cache_bytes: 0 });
        let fit = batch_fit(&fp, fixed, shape(), machine, 1).unwrap();
        assert_eq!(fit.largest, 3);
        let req = MemoryRequest { choice: fixed, streamed_trunk: true, context_length: 1, io_threads: 4 };
        let three = plan_sequences(&fp, &req, machine, true, (ResidencyRule::Prefix, None, 3)).unwrap();
        assert_eq!(three.total_bytes, 3 << 62);
        let four = plan_sequences(&fp, &req, machine, true, (ResidencyRule::Prefix, None, 4));
        assert!(matches!(four, Err(PlanError::Overflow { .. })), "{four:?}");
    }
}
