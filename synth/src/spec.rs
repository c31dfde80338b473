//! What a synthetic checkpoint looks like: every config value, the expert storage and the
//! seed, with the named presets `tiny` and `k3-mid`.
//!
//! Owns: [`SynthSpec`], [`ExpertStorage`], the presets and the default layer pattern used
//! when only the depth is changed (validation is `validate`'s).
//! Must not: hold derived values (layer kinds, `kda_layers`, shared width): they are
//! computed from the fields, so an override can never leave them inconsistent.
//! Easy to break: `full_attn_layers` is ONE-based, like the released config.

use k3_engine::{Error, Result};

/// How the routed experts are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertStorage {
    /// `weight_packed` / `weight_scale` U8 pairs, as released.
    Mxfp4,
    /// One BF16 `weight` per matrix in its logical shape (test checkpoints).
    Bf16,
}

impl ExpertStorage {
    pub fn name(self) -> &'static str {
        match self {
            ExpertStorage::Mxfp4 => "mxfp4",
            ExpertStorage::Bf16 => "bf16",
        }
    }
}

/// Every value of a synthetic checkpoint. Field names follow `config.json` (spec §2.2).
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSpec {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    /// One-based indices of the MLA layers; every other layer is KDA.
    pub full_attn_layers: Vec<usize>,
    pub vocab_size: usize,
    pub rms_norm_eps: f64,
    pub kda_num_heads: usize,
    pub kda_head_dim: usize,
    pub short_conv_kernel_size: usize,
    pub gate_lower_bound: f64,
    pub num_attention_heads: usize,
    pub q_lora_rank: usize,
    pub kv_lora_rank: usize,
    pub qk_nope_head_dim: usize,
    pub qk_rope_head_dim: usize,
    pub v_head_dim: usize,
    pub mla_use_output_gate: bool,
    pub num_experts: usize,
    pub num_experts_per_token: usize,
    pub num_shared_experts: usize,
    pub routed_expert_hidden_size: usize,
    pub moe_intermediate_size: usize,
    pub routed_scaling_factor: f64,
    pub moe_renormalize: bool,
    pub latent_moe_use_norm: bool,
    pub first_k_dense_replace: usize,
    pub intermediate_size: usize,
    pub attn_res_block_size: usize,
    pub activation_situ_beta: f64,
    pub activation_situ_linear_beta: f64,
    pub expert_storage: ExpertStorage,
    pub seed: u64,
}

/// Names accepted by [`SynthSpec::preset`].
pub const PRESETS: [&str; 2] = ["tiny", "k3-mid"];

impl SynthSpec {
    /// The shape of `fixtures/tiny-mxfp4` (spec §13 with vocab 768 and expert width 64).
    pub fn tiny() -> SynthSpec {
        SynthSpec {
            hidden_size: 128,
            num_hidden_layers: 13,
            full_attn_layers: vec![4, 8, 12, 13],
            vocab_size: 768,
            rms_norm_eps: 1e-5,
            kda_num_heads: 4,
            kda_head_dim: 16,
            short_conv_kernel_size: 4,
            gate_lower_bound: -5.0,
            num_attention_heads: 4,
            q_lora_rank: 64,
            kv_lora_rank: 32,
            qk_nope_head_dim: 24,
            qk_rope_head_dim: 8,
            v_head_dim: 16,
            mla_use_output_gate: true,
            num_experts: 8,
            num_experts_per_token: 2,
            num_shared_experts: 2,
            routed_expert_hidden_size: 64,
            moe_intermediate_size: 64,
            routed_scaling_factor: 1.0,
            moe_renormalize: true,
            latent_moe_use_norm: true,
            first_k_dense_replace: 1,
            intermediate_size: 96,
            attn_res_block_size: 3,
            activation_situ_beta: 4.0,
            activation_situ_linear_beta: 25.0,
            expert_storage: ExpertStorage::Mxfp4,
            seed: 0,
        }
    }

    /// Real K3 per-layer dimensions (`k3_plan::released`) with 4 layers (KDA+dense, KDA+MoE, MLA+MoE, MLA+MoE),
    /// 96 routed experts per MoE layer, dense width 8192 and vocab 768 (~9.2 GB).
    pub fn k3_mid() -> SynthSpec {
        use k3_plan::released as k3;
        let width = |n: u64| n as usize;
        SynthSpec {
            hidden_size: width(k3::HIDDEN),
            num_hidden_layers: 4,
            full_attn_layers: vec![3, 4],
            vocab_size: 768,
            kda_num_heads: width(k3::KDA_HEADS),
            kda_head_dim: width(k3::KDA_HEAD_DIM),
            num_attention_heads: width(k3::MLA_HEADS),
            q_lora_rank: width(k3::Q_LORA),
            kv_lora_rank: width(k3::KV_LORA),
            qk_nope_head_dim: width(k3::QK_NOPE),
            qk_rope_head_dim: width(k3::QK_ROPE),
            v_head_dim: width(k3::V_HEAD),
            num_experts: 96,
            num_experts_per_token: width(k3::TOP_K),
            routed_expert_hidden_size: width(k3::LATENT),
            moe_intermediate_size: width(k3::EXPERT_INTER),
            intermediate_size: 8192,
            attn_res_block_size: 12,
            ..SynthSpec::tiny()
        }
    }

    /// A preset by name (see [`PRESETS`]).
    pub fn preset(name: &str) -> Result<SynthSpec> {
        match name {
            "tiny" => Ok(SynthSpec::tiny()),
            "k3-mid" => Ok(SynthSpec::k3_mid()),
            _ => Err(Error::Option { option: "preset", reason: format!("`{name}` is not one of {PRESETS:?}") }),
        }
    }

    /// Changes the depth; the MLA layers become K3's pattern for that depth
    /// ([`default_full_attn_layers`]). A depth outside 1..=[`MAX_SYNTH_LAYERS`] is refused
    /// (the reason) before anything is sized by it.
    pub fn set_layers(&mut self, n_layers: usize) -> std::result::Result<(), String> {
        check_layers(n_layers)?;
        self.num_hidden_layers = n_layers;
        self.full_attn_layers = default_full_attn_layers(n_layers);
        Ok(())
    }

    /// One-based KDA layers: the complement of `full_attn_layers`.
    pub fn kda_layers(&self) -> Vec<usize> {
        (1..=self.num_hidden_layers).filter(|l| !self.full_attn_layers.contains(l)).collect()
    }
}

/// The most routed experts a synthetic checkpoint has in all (K3: 92 × 896 = 82,432).
pub const MAX_SYNTH_EXPERTS: u64 = 1 << 20;
/// The most decoder layers a synthetic checkpoint has (K3: 93).
pub const MAX_SYNTH_LAYERS: usize = 1024;

/// Refuses a depth outside 1..=[`MAX_SYNTH_LAYERS`] (probe finding: `--layers 1e9` sized
/// its layer lists before any check, 17.6 GB for a dry run).
pub(crate) fn check_layers(n_layers: usize) -> std::result::Result<(), String> {
    if (1..=MAX_SYNTH_LAYERS).contains(&n_layers) {
        return Ok(());
    }
    Err(format!("{n_layers} layers; a synthetic checkpoint has 1 to {MAX_SYNTH_LAYERS}"))
}

/// K3's layer pattern at any depth: every fourth layer is MLA, and so is the last
/// (one-based; 13 layers give `[4, 8, 12, 13]`, 93 give K3's 24 entries).
pub fn default_full_attn_layers(n_layers: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (4..=n_layers).step_by(4).collect();
    if n_layers > 0 && v.last() != Some(&n_layers) {
        v.push(n_layers);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use k3_io::config::LayerKind;

    #[test]
    fn presets_validate_and_have_the_intended_layer_maps() {
        assert_eq!(SynthSpec::tiny().validate().unwrap().layer_map(), "KKKMKKKMKKKMM");
        let mid = SynthSpec::k3_mid().validate().unwrap();
        assert_eq!(mid.layer_map(), "KKMM");
        assert_eq!(mid.layer_kinds[0], LayerKind::Kda);
        assert!(mid.is_dense(0) && !mid.is_dense(1));
    }

    #[test]
    fn default_pattern_matches_k3_and_the_tiny_fixture() {
        assert_eq!(default_full_attn_layers(13), vec![4, 8, 12, 13]);
        let k3 = default_full_attn_layers(93);
        assert_eq!(k3.len(), 24);
        assert_eq!(&k3[22..], &[92, 93]);
        assert_eq!(default_full_attn_layers(5), vec![4, 5]);
    }

    #[test]
    fn invalid_specs_are_refused_with_the_field_name() {
        let mut s = SynthSpec::tiny();
        s.num_experts_per_token = 9;
        assert!(s.validate().unwrap_err().to_string().contains("num_experts_per_token"));
        let mut s = SynthSpec::tiny();
        s.moe_intermediate_size = 48;
        assert!(s.validate().unwrap_err().to_string().contains("moe_intermediate_size"));
        s.expert_storage = ExpertStorage::Bf16;
        assert!(s.validate().is_ok());
        let mut s = SynthSpec::tiny();
        s.set_layers(1).unwrap();
        assert!(s.validate().is_err(), "one layer leaves no KDA layer");
        for n in [0, MAX_SYNTH_LAYERS + 1, 1_000_000_000] {
            assert!(s.set_layers(n).unwrap_err().contains("1 to 1024"), "{n}");
        }
        s.num_hidden_layers = 1_000_000_000;
        assert!(s.validate().unwrap_err().to_string().contains("num_hidden_layers"));
    }
}
