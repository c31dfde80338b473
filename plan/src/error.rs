//! [`PlanError`]: every way a memory request cannot become a plan, with the numbers.
//!
//! Owns: the refusal reasons of the planner, `auto`, preset and size parsing, and the
//! fit check against the machine; their `Display` text, which names the budget, the
//! minimum and the shortfall so a person can fix the request.
//! Must not: lose a number: callers show `to_string()` as is (CLI, app, wasm).

use crate::size::format_bytes;

/// Why no plan fits the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The trunk budget cannot hold even one ring slot and its read buffer.
    TrunkBudgetTooSmall { budget_bytes: u64, minimum_bytes: u64 },
    /// Without a packed trunk every layer stays resident, and the trunk budget is smaller
    /// than the whole trunk.
    TrunkNotPacked { budget_bytes: u64, trunk_bytes: u64 },
    /// The cache budget holds fewer than `top_k + 1` expert slots.
    CacheBudgetTooSmall { budget_bytes: u64, minimum_bytes: u64, slot_bytes: u64, minimum_slots: u64 },
    /// `auto`: after the headroom and the fixed needs, too little memory is left.
    AutoTooSmall { usable_bytes: u64, needed_bytes: u64 },
    /// The plan needs more than the machine has available.
    ExceedsAvailable { needed_bytes: u64, available_bytes: u64 },
    /// The context length is zero or above the model's ceiling.
    ContextLength { requested: u64, maximum: u64 },
    /// A preset name that is not one of [`crate::Preset::ALL`].
    UnknownPreset { name: String },
    /// A size such as `3GB` that does not parse.
    Size { text: String, reason: &'static str },
    /// A figure of the plan would pass 64 bits: the footprint is not one of a real model.
    Overflow { what: &'static str },
    /// A measured rate the cost planner needs is not a positive number.
    Rate { what: &'static str, value: String },
    /// More live sequences than one plan may keep ([`crate::MAX_SEQUENCES`]), or none.
    Sequences { requested: u64, maximum: u64 },
    /// `sequences` live sequences (each with its state and KV cache) need more than the
    /// machine has available; `largest` fit ([`crate::batch_fit`]).
    BatchTooLarge { sequences: u64, largest: u64, per_sequence_bytes: u64, needed_bytes: u64, available_bytes: u64 },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = |bytes: &u64| format_bytes(*bytes);
        match self {
            PlanError::TrunkBudgetTooSmall { budget_bytes, minimum_bytes } => write!(
                f,
                "trunk budget {} cannot hold one ring slot; at least {} is needed",
                b(budget_bytes),
                b(minimum_bytes)
            ),
            PlanError::TrunkNotPacked { budget_bytes, trunk_bytes } => write!(
                f,
                "trunk budget {} is smaller than the whole trunk ({}), which stays in RAM without a packed trunk: \
                 pack it (`k3 pack`) and give --trunk, or raise the trunk budget",
                b(budget_bytes),
                b(trunk_bytes)
            ),
            PlanError::CacheBudgetTooSmall { budget_bytes, minimum_bytes, slot_bytes, minimum_slots } => write!(
                f,
                "cache budget {} holds fewer than {minimum_slots} expert slots of {slot_bytes} bytes; \
                 at least {} is needed",
                b(budget_bytes),
                b(minimum_bytes)
            ),
            PlanError::AutoTooSmall { usable_bytes, needed_bytes } => {
                write!(f, "auto: {} usable after headroom, at least {} needed", b(usable_bytes), b(needed_bytes))
            }
            PlanError::ExceedsAvailable { needed_bytes, available_bytes } => write!(
                f,
                "the plan needs {} but this machine has {} available ({} short; lower the budgets or free memory)",
                b(needed_bytes),
                b(available_bytes),
                b(&needed_bytes.saturating_sub(*available_bytes))
            ),
            PlanError::ContextLength { requested, maximum } => {
                write!(f, "context length {requested} must be between 1 and {maximum} positions")
            }
            PlanError::UnknownPreset { name } => {
                let names: Vec<&str> = crate::Preset::ALL.iter().map(|p| p.name()).collect();
                write!(f, "unknown preset `{name}` (use {})", names.join(", "))
            }
            PlanError::Size { text, reason } => write!(f, "`{text}` {reason} (try 512MB, 3GB, 1.5GiB)"),
            PlanError::Overflow { what } => {
                write!(f, "the model's sizes overflow 64 bits ({what}): these figures are not a real checkpoint's")
            }
            PlanError::Rate { what, value } => write!(f, "{what} must be a positive number of bytes/s (got {value})"),
            PlanError::Sequences { requested, maximum } => {
                write!(f, "{requested} conversations at once is not between 1 and {maximum}")
            }
            PlanError::BatchTooLarge { sequences, largest, per_sequence_bytes, needed_bytes, available_bytes } => {
                write!(
                    f,
                    "{sequences} conversations at once need {} ({} each for its state and KV cache) but this machine \
                     has {} available: this plan keeps at most {largest} at once (lower the context or the budgets)",
                    b(needed_bytes),
                    b(per_sequence_bytes),
                    b(available_bytes)
                )
            }
        }
    }
}

impl std::error::Error for PlanError {}
