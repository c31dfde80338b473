//! `config.json` → `ModelConfig` (`ModelConfig::from_json`).
//!
//! Invariants of an accepted config (what `config.rs` promises, spec §2.3): every size is
//! in `1..=2^24` (`qk_rope_head_dim` and `first_k_dense_replace` may be 0); one layer kind
//! per layer, at least one MLA and one KDA layer; top-k in `1..=min(64, experts)`; the dense
//! prefix within the layers; every float finite, `rms_norm_eps` and the SiTU betas
//! positive, `gate_lower_bound` negative; the input had no duplicate key; parsing is
//! deterministic, and the same object under a top-level `"config"` key gives the same config.
#![no_main]

use std::path::Path;

use k3_io::config::{LayerKind, MAX_TOP_K};
use k3_engine::ModelConfig;
use k3_fuzz::json_has_duplicate_keys;
use libfuzzer_sys::fuzz_target;

const MAX_DIM: usize = 1 << 24;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("/fuzz/model/config.json");
    let Ok(cfg) = ModelConfig::from_json(data, path) else { return };
    assert!(!json_has_duplicate_keys(data), "a config with a repeated key was accepted");
    let sizes = [
        cfg.hidden_size,
        cfg.n_layers,
        cfg.vocab_size,
        cfg.kda.n_heads,
        cfg.kda.head_dim,
        cfg.kda.conv_kernel,
        cfg.mla.n_heads,
        cfg.mla.q_lora_rank,
        cfg.mla.kv_lora_rank,
        cfg.mla.qk_nope_head_dim,
        cfg.mla.v_head_dim,
        cfg.moe.n_experts,
        cfg.moe.top_k,
        cfg.moe.n_shared_experts,
        cfg.moe.latent_dim,
        cfg.moe.expert_intermediate,
        cfg.dense_intermediate,
        cfg.attn_res_block_size,
    ];
    assert!(sizes.iter().all(|&s| (1..=MAX_DIM).contains(&s)), "a size outside 1..=2^24: {sizes:?}");
    assert!(cfg.mla.qk_rope_head_dim <= MAX_DIM && cfg.first_k_dense <= cfg.n_layers);
    assert_eq!(cfg.layer_kinds.len(), cfg.n_layers);
    assert!(cfg.layer_kinds.contains(&LayerKind::Mla) && cfg.layer_kinds.contains(&LayerKind::Kda));
    assert!(cfg.moe.top_k <= MAX_TOP_K.min(cfg.moe.n_experts));
    for v in [cfg.rms_norm_eps, cfg.situ_beta_gate, cfg.situ_beta_up] {
        assert!(v.is_finite() && v > 0.0, "{v} must be finite and positive");
    }
    assert!(cfg.kda.gate_lower_bound.is_finite() && cfg.kda.gate_lower_bound < 0.0);
    assert!(cfg.moe.routed_scaling_factor.is_finite());
    assert_eq!(cfg.layer_map().len(), cfg.n_layers);

    assert_eq!(ModelConfig::from_json(data, path).ok().as_ref(), Some(&cfg), "parsing is not deterministic");
    let root: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(data).expect("accepted JSON parses");
    if !root.contains_key("config") {
        let mut wrapped = b"{\"config\":".to_vec();
        wrapped.extend_from_slice(data);
        wrapped.push(b'}');
        assert_eq!(ModelConfig::from_json(&wrapped, path).ok(), Some(cfg), "the `config` wrapper changes the config");
    }
});
