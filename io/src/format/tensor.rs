//! Where one tensor lives: a leaf type the index, the remote reader and the name table
//! share, so none of them imports another for it.
//!
//! Owns: [`TensorInfo`].

use super::dtype::Dtype;

/// Where one tensor lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: Dtype,
    /// Dimensions, outermost first; `[]` is a scalar.
    pub shape: Vec<u64>,
    /// Position of the shard in `TensorIndex::shard_paths`.
    pub shard_idx: usize,
    /// Absolute file offset of the first byte.
    pub offset: u64,
    pub nbytes: u64,
}

impl TensorInfo {
    /// Number of elements (1 for a scalar); saturates instead of overflowing on a
    /// hand-made `TensorInfo` (indexed ones were checked not to overflow).
    pub fn numel(&self) -> u64 {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).unwrap_or(u64::MAX)
    }
}
