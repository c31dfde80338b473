//! Checkpoint format: strict safetensors shards and the tensor index over a model folder.
//!
//! Owns: `Dtype`, every way a checkpoint file can be malformed (`CheckpointFault`), and
//! `TensorIndex`, which validates each shard header, checks the optional
//! `model.safetensors.index.json` against the headers, and reads tensors on demand
//! (K3-MODEL-SPEC §6.3, §6.7; RELIABILITY §2.1 ST-01..ST-20, IX-01..IX-03).
//! Must not: map or read a whole shard (only the 8-byte length, the header, then tensors
//! by positioned reads), allocate before a length has been checked against the file size
//! and a cap, or panic on any input: all arithmetic on file numbers is checked.
//! Easy to break: the reader is deliberately stricter than the reference `safetensors`
//! crate (duplicate keys, unknown fields, holes, trailing bytes, padding other than
//! spaces); relaxing one rule silently reopens a RELIABILITY case.
//!
//! Layout: `entry` (one tensor entry) ← `header` (pure bytes → entries) ← `shard` (one
//! file) ← `index` (the folder). `weight_map` checks the index file, `names` holds the
//! naming rules, `json_probe` the serde visitors that turn type surprises into faults,
//! `table` the name lookup and `tensor` the leaf `TensorInfo` they share.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

mod dtype;
mod entry;
mod fault;
mod header;
mod index;
mod json_probe;
mod names;
pub mod remote;
mod shard;
mod table;
mod tensor;
mod weight_map;

pub use dtype::Dtype;
pub use fault::CheckpointFault;
pub use index::{ShardHead, TensorIndex};
pub use tensor::TensorInfo;
