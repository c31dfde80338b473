//! Measures a checkpoint's memory footprint for the planner, from the config and the
//! tensor index alone (no weight is read).
//!
//! Owns: per-layer trunk bytes (every `layers.ℓ.` tensor except routed experts), the size
//! of one routed expert and the MoE layer count, the always-resident model-level tensors
//! (and of them the output head), recurrent state and KV bytes per position (the formulas
//! of `k3_plan::sequence`), a scratch estimate for one forward chunk, and each layer's
//! pieces (`k3_plan::LayerPieces`: its largest matrix, its small tensors' buffers).

use k3_plan::sequence::{kv_bytes_per_position, recurrent_state_bytes, MlaCacheShape};
use k3_plan::{is_piece_shape, ring_slot_bytes_for, scratch_bytes_for, Footprint, LayerPieces};

use crate::config::{LayerKind, ModelConfig};
use crate::error::Result;
use crate::format::TensorIndex;
use crate::model::names;
use crate::stream::expert_dir::locate;

pub use k3_plan::PREFILL_CHUNK;

/// The layer a tensor name belongs to, if it is a per-layer tensor.
fn layer_of(name: &str) -> Option<usize> {
    let rest = name.strip_prefix(names::MODEL_PREFIX)?.strip_prefix("layers.")?;
    rest.split('.').next()?.parse().ok()
}

/// The footprint of the model behind `index`.
pub fn footprint(cfg: &ModelConfig, index: &TensorIndex) -> Result<Footprint> {
    let mut layer_trunk_bytes = vec![0u64; cfg.n_layers];
    let mut layer_pieces = vec![LayerPieces::default(); cfg.n_layers];
    for t in index.tensors() {
        if let Some(l) = layer_of(&t.name).filter(|&l| l < cfg.n_layers) {
            if !t.name.starts_with(&names::experts_prefix(l)) {
                layer_trunk_bytes[l] += t.nbytes;
                let p = &mut layer_pieces[l];
                if is_piece_shape(&t.shape) {
                    p.largest_piece = p.largest_piece.max(t.nbytes);
                } else {
                    p.eager_bytes += ring_slot_bytes_for(t.nbytes);
                }
            }
        }
    }
    let mut expert_bytes = 0;
    let mut n_experts_total = 0;
    let mut moe_layers = 0;
    for l in (0..cfg.n_layers).filter(|&l| !cfg.is_dense(l)) {
        moe_layers += 1;
        for e in 0..cfg.moe.n_experts {
            expert_bytes = expert_bytes.max(locate(index, l, e)?.1);
            n_experts_total += 1;
        }
    }
    let resident_bytes = [
        names::embed_tokens(),
        names::lm_head(),
        names::final_norm(),
        names::output_attn_res_norm(),
        names::output_attn_res_proj(),
    ]
    .iter()
    .filter_map(|n| index.get(n))
    .map(|t| t.nbytes)
    .sum();
    let head_bytes = index.get(&names::lm_head()).map_or(0, |t| t.nbytes);
    let embed_bytes = index.get(&names::embed_tokens()).map_or(0, |t| t.nbytes);
    let (h, d, k) = (cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
    let n_kda = cfg.layer_kinds.iter().filter(|&&k| k == LayerKind::Kda).count();
    let n_mla = cfg.n_layers - n_kda;
    let m = &cfg.mla;
    let state_bytes = recurrent_state_bytes(n_kda as u64, h as u64, d as u64, k as u64);
    let mla = MlaCacheShape { kv_lora_rank: m.kv_lora_rank as u64, qk_rope_head_dim: m.qk_rope_head_dim as u64 };
    let kv_bytes_per_position = kv_bytes_per_position(n_mla as u64, mla);
    let widest = [h * d, cfg.hidden_size, m.n_heads * m.qk_head_dim(), cfg.dense_intermediate, cfg.moe.n_experts]
        .into_iter()
        .max()
        .unwrap_or(0);
    let latent_queries = m.n_heads * (m.kv_lora_rank + m.qk_rope_head_dim);
    let scratch_bytes = scratch_bytes_for(widest as u64, latent_queries as u64, cfg.vocab_size as u64);
    Ok(Footprint {
        layer_trunk_bytes,
        expert_bytes,
        n_experts_total,
        top_k: cfg.moe.top_k as u64,
        moe_layers,
        resident_bytes,
        head_bytes,
        embed_bytes,
        vocab_rows: cfg.vocab_size as u64,
        state_bytes,
        kv_bytes_per_position,
        scratch_bytes,
        layer_pieces,
    })
}
