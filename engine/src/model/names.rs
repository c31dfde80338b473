//! The one table of released tensor names (spec §6.4). No other file spells a name.
//!
//! Owns: the `language_model.` prefixes and every per-layer suffix.
//! Easy to break: `lm_head` has no `.model.`; `A_log` and `dt_bias` have no `.weight`;
//! routed experts live under `block_sparse_moe.experts.E.wN`.

/// Prefix of every decoder tensor.
pub const MODEL_PREFIX: &str = "language_model.model.";

pub fn embed_tokens() -> String {
    format!("{MODEL_PREFIX}embed_tokens.weight")
}
pub fn final_norm() -> String {
    format!("{MODEL_PREFIX}norm.weight")
}
pub fn output_attn_res_norm() -> String {
    format!("{MODEL_PREFIX}output_attn_res_norm.weight")
}
pub fn output_attn_res_proj() -> String {
    format!("{MODEL_PREFIX}output_attn_res_proj.weight")
}
pub fn lm_head() -> String {
    "language_model.lm_head.weight".to_string()
}

/// `language_model.model.layers.{layer}.{suffix}`.
pub fn layer(layer_idx: usize, suffix: &str) -> String {
    format!("{MODEL_PREFIX}layers.{layer_idx}.{suffix}")
}

/// Prefix shared by every routed-expert tensor of a layer (they are the streamable part).
pub fn experts_prefix(layer_idx: usize) -> String {
    layer(layer_idx, "block_sparse_moe.experts.")
}

/// Which of an expert's three matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertProj {
    /// Gate, `[I, L]`.
    W1,
    /// Down, `[L, I]`.
    W2,
    /// Up, `[I, L]`.
    W3,
}

impl ExpertProj {
    fn tag(self) -> &'static str {
        match self {
            ExpertProj::W1 => "w1",
            ExpertProj::W2 => "w2",
            ExpertProj::W3 => "w3",
        }
    }
}

/// `…experts.{expert}.{w}.{part}` where part is `weight`, `weight_packed` or `weight_scale`.
pub fn expert(layer_idx: usize, expert_idx: usize, proj: ExpertProj, part: &str) -> String {
    format!("{}{expert_idx}.{}.{part}", experts_prefix(layer_idx), proj.tag())
}

// Per-layer suffixes (relative to `layers.{ℓ}.`).
pub const INPUT_NORM: &str = "input_layernorm.weight";
pub const POST_ATTN_NORM: &str = "post_attention_layernorm.weight";
pub const ATTN_RES_NORM: &str = "self_attention_res_norm.weight";
pub const ATTN_RES_PROJ: &str = "self_attention_res_proj.weight";
pub const MLP_RES_NORM: &str = "mlp_res_norm.weight";
pub const MLP_RES_PROJ: &str = "mlp_res_proj.weight";

pub const KDA_Q: &str = "self_attn.q_proj.weight";
pub const KDA_K: &str = "self_attn.k_proj.weight";
pub const KDA_V: &str = "self_attn.v_proj.weight";
pub const KDA_G: &str = "self_attn.g_proj.weight";
pub const KDA_O: &str = "self_attn.o_proj.weight";
pub const KDA_Q_CONV: &str = "self_attn.q_conv1d.weight";
pub const KDA_K_CONV: &str = "self_attn.k_conv1d.weight";
pub const KDA_V_CONV: &str = "self_attn.v_conv1d.weight";
pub const KDA_F_A: &str = "self_attn.f_a_proj.weight";
pub const KDA_F_B: &str = "self_attn.f_b_proj.weight";
pub const KDA_B: &str = "self_attn.b_proj.weight";
pub const KDA_A_LOG: &str = "self_attn.A_log";
pub const KDA_DT_BIAS: &str = "self_attn.dt_bias";
pub const KDA_O_NORM: &str = "self_attn.o_norm.weight";

pub const MLA_Q_A: &str = "self_attn.q_a_proj.weight";
pub const MLA_Q_A_NORM: &str = "self_attn.q_a_layernorm.weight";
pub const MLA_Q_B: &str = "self_attn.q_b_proj.weight";
pub const MLA_KV_A: &str = "self_attn.kv_a_proj_with_mqa.weight";
pub const MLA_KV_A_NORM: &str = "self_attn.kv_a_layernorm.weight";
pub const MLA_KV_B: &str = "self_attn.kv_b_proj.weight";
pub const MLA_O: &str = "self_attn.o_proj.weight";
pub const MLA_G: &str = "self_attn.g_proj.weight";

pub const DENSE_GATE: &str = "mlp.gate_proj.weight";
pub const DENSE_UP: &str = "mlp.up_proj.weight";
pub const DENSE_DOWN: &str = "mlp.down_proj.weight";

pub const MOE_ROUTER: &str = "block_sparse_moe.gate.weight";
pub const MOE_ROUTER_BIAS: &str = "block_sparse_moe.gate.e_score_correction_bias";
pub const MOE_LATENT_DOWN: &str = "block_sparse_moe.routed_expert_down_proj.weight";
pub const MOE_LATENT_UP: &str = "block_sparse_moe.routed_expert_up_proj.weight";
pub const MOE_LATENT_NORM: &str = "block_sparse_moe.routed_expert_norm.weight";
pub const MOE_SHARED_GATE: &str = "block_sparse_moe.shared_experts.gate_proj.weight";
pub const MOE_SHARED_UP: &str = "block_sparse_moe.shared_experts.up_proj.weight";
pub const MOE_SHARED_DOWN: &str = "block_sparse_moe.shared_experts.down_proj.weight";
