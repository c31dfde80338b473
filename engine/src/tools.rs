//! The door for the command-line tools that do not run a model: a checkpoint's footprint from
//! its headers (after the checks `Engine::load` makes), the plan the engine would make for it,
//! a packed trunk's layout, the trunk pack itself, and the machine's measured rates the
//! forecasts use. `k3 plan`, `k3 forecast` and `k3 pack` need these; only the benches reach
//! into [`crate::advanced`].
//!
//! Owns: [`footprint_of`], [`kernel_isa`]; the rest are the insides' own names, re-exported.

use k3_io::format::TensorIndex;
use k3_plan::Footprint;

use crate::config::ModelConfig;
use crate::error::Result;

pub use crate::advanced::bench::decode_rates::{measure_decode_rates, DecodeRates};
pub use crate::stream::plan::make_plan;
pub use crate::stream::trunk_codec::TrunkCodec;
pub use crate::stream::trunk_manifest::{open_packed_trunk, CodedLayout, PackedTrunk};
pub use crate::stream::trunk_pack::{pack_trunk_coded, PackProgress, PackStage};

/// The checkpoint's footprint (what each part of it would hold in memory), after every check
/// `Engine::load` makes of its config and headers: a checkpoint the engine refuses has none.
pub fn footprint_of(cfg: &ModelConfig, index: &TensorIndex) -> Result<Footprint> {
    crate::model::Model::validate(cfg, index)?;
    crate::stream::footprint::footprint(cfg, index)
}

/// The name of the kernel bodies this process runs (`avx512`, `avx2`, `neon`, `portable`).
pub fn kernel_isa() -> &'static str {
    crate::kernels::dispatch::current().isa().name()
}
