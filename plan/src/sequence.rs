//! What one sequence holds besides the weights: the KDA recurrent state with its
//! ShortConv histories, and the MLA cache per position (spec §4.3, §4.4, §4.8).
//!
//! Owns: the two formulas, so the engine's footprint of a checkpoint
//! (`engine::stream::footprint`) and the released figures ([`crate::released`]) are the
//! same arithmetic.
//! Must not: know K3's numbers: every dimension is an argument.
//! Easy to break: the state is reserved for the KDA layers only (spec §1 quotes 626.25 MB
//! because the C engine reserves a slot for all 93 layers); values are f32.

/// Bytes of f32 state one KDA layer of `heads` × `head_dim` carries: the `D × D` state per
/// head and the `K − 1` previous raw inputs of its three ShortConvs (q, k, v).
/// Saturating (as the other formulas here): a figure past 64 bits fits no budget.
pub fn kda_layer_state_bytes(heads: u64, head_dim: u64, conv_kernel: u64) -> u64 {
    let state = heads.saturating_mul(head_dim).saturating_mul(head_dim);
    let conv = heads.saturating_mul(head_dim).saturating_mul(3).saturating_mul(conv_kernel.saturating_sub(1));
    state.saturating_add(conv).saturating_mul(4)
}

/// Bytes of the recurrent state of one sequence over `kda_layers` KDA layers.
pub fn recurrent_state_bytes(kda_layers: u64, heads: u64, head_dim: u64, conv_kernel: u64) -> u64 {
    kda_layers.saturating_mul(kda_layer_state_bytes(heads, head_dim, conv_kernel))
}

/// The shape of an MLA layer's cache entry: the normalised KV latent and the shared
/// `k_rope` of one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlaCacheShape {
    pub kv_lora_rank: u64,
    pub qk_rope_head_dim: u64,
}

/// MLA cache bytes per position over `mla_layers` layers: each layer's latent and shared
/// `k_rope` as f32 (the engine's latent cache; attention runs in the absorbed form).
pub fn kv_bytes_per_position(mla_layers: u64, shape: MlaCacheShape) -> u64 {
    let per_layer = shape.kv_lora_rank.saturating_add(shape.qk_rope_head_dim);
    mla_layers.saturating_mul(per_layer).saturating_mul(4)
}
