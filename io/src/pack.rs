//! The interface of a trunk packer: what the install pipeline (`k3-store`) needs to run
//! the engine's packer without depending on the engine. Both crates sit on this one.
//!
//! Owns: [`TrunkPacker`], [`PackStage`], [`PackProgress`], [`PackedTrunk`].

use std::path::Path;

/// Which part of the pack is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackStage {
    /// Copying the layer's trunk run into `trunk.bin`.
    Trunk,
    /// Reading the layer's routed experts for their CRC32C (`experts.crc32c.json`).
    ExpertSums,
}

/// Progress of a pack, reported after every chunk and every expert; `bytes_*` count the
/// trunk and then the experts, so the fraction runs once from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackProgress {
    pub stage: PackStage,
    /// 0-based: the layer being written or checksummed.
    pub layer_idx: usize,
    pub n_layers: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

/// What a packer wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedTrunk {
    pub file_bytes: u64,
    /// Layers taken from an interrupted pack instead of copied again.
    pub resumed_layers: usize,
}

/// Packs a model folder's trunk into a trunk folder (the engine's `TrunkPack`).
pub trait TrunkPacker {
    type Error;
    /// The trunk in `trunk` was packed from exactly these shards and opens.
    fn is_current(&self, store: &Path, trunk: &Path) -> bool;
    /// Packs (resuming an interrupted pack), calling `progress` as it goes.
    fn pack(
        &self,
        store: &Path,
        trunk: &Path,
        progress: &mut dyn FnMut(PackProgress),
    ) -> Result<PackedTrunk, Self::Error>;
}
