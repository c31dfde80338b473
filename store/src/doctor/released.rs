//! The released K3 checkpoint as the doctor needs it: the byte totals a model store must
//! hold and the footprint presets are sized from — all taken from `k3_plan::released`, the
//! one place the spec's tensor catalogue becomes numbers.
//!
//! Owns: the space margin. Must not: restate a size the planner's data already has.

use k3_plan::Footprint;

/// Bytes of the released shards (the language model's and the vision tower's).
pub const CHECKPOINT_BYTES: u64 = k3_plan::released::RELEASED_CHECKPOINT_BYTES;

/// Bytes of the packed `trunk.bin`, padding included.
pub const PACKED_TRUNK_BYTES: u64 = k3_plan::released::RELEASED_PACKED_TRUNK_BYTES;

/// Free space kept beyond the files, as a fraction of them (PRODUCT.md §1.1, step 3: "+ 1%").
pub const SPACE_MARGIN: f64 = 0.01;

/// The released model's footprint for `k3_plan`.
pub fn footprint() -> Footprint {
    k3_plan::released::released_footprint()
}
