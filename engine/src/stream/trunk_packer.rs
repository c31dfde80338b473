//! The engine's trunk packer behind `k3_io::TrunkPacker`, the interface the store's install
//! pipeline runs: packs with [`pack_trunk`] (raw layers) and skips a trunk that is current.
//!
//! Owns: [`TrunkPack`].

use std::path::Path;

use crate::error::{Error, Result};
use crate::stream::trunk_manifest::trunk_is_current;
use crate::stream::trunk_pack::{pack_trunk, PackProgress};

/// The engine's packer as the store's install pipeline runs it: [`pack_trunk`] (raw
/// layers) and [`trunk_is_current`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TrunkPack;

impl k3_io::TrunkPacker for TrunkPack {
    type Error = Error;

    fn is_current(&self, store: &Path, trunk: &Path) -> bool {
        trunk_is_current(store, trunk)
    }

    fn pack(&self, store: &Path, trunk: &Path, step: &mut dyn FnMut(PackProgress)) -> Result<k3_io::PackedTrunk> {
        let summary = pack_trunk(store, trunk, step)?;
        Ok(k3_io::PackedTrunk { file_bytes: summary.file_bytes, resumed_layers: summary.resumed_layers })
    }
}
