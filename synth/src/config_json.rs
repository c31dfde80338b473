//! `config.json` of a synthetic checkpoint, in the released nested form.
//!
//! Owns: the key set and key order of `fixtures/tiny-mxfp4/config.json` (`text_config`
//! with `linear_attn_config` inside, betas as `activation_situ_*beta`, `kda_layers` as the
//! one-based complement, `quantization_config` only for MXFP4 experts).
//! Must not: depend on serde_json's map ordering (a feature elsewhere in the build could
//! switch it), so the text is laid out here, in a fixed order.
//! Easy to break: numbers go through serde_json so that a non-finite value becomes `null`
//! and the engine's reader refuses it with the field's name.

use super::spec::{ExpertStorage, SynthSpec};

/// A JSON value with keys in a fixed order.
enum J {
    /// Already-rendered scalar text.
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

fn int(v: usize) -> J {
    J::Raw(v.to_string())
}
fn num(v: f64) -> J {
    J::Raw(serde_json::to_string(&v).unwrap_or_else(|_| "null".into()))
}
fn boolean(v: bool) -> J {
    J::Raw(v.to_string())
}
fn string(v: &str) -> J {
    J::Raw(serde_json::Value::from(v).to_string())
}
fn ints(v: &[usize]) -> J {
    J::Arr(v.iter().map(|&x| int(x)).collect())
}

/// The nested `config.json` text for `spec` (two-space indent, trailing newline).
pub(crate) fn render(spec: &SynthSpec) -> String {
    let s = spec;
    let linear = J::Obj(vec![
        ("num_heads", int(s.kda_num_heads)),
        ("head_dim", int(s.kda_head_dim)),
        ("short_conv_kernel_size", int(s.short_conv_kernel_size)),
        ("gate_lower_bound", num(s.gate_lower_bound)),
        ("use_full_rank_gate", boolean(true)),
        ("full_attn_layers", ints(&s.full_attn_layers)),
        ("kda_layers", ints(&s.kda_layers())),
    ]);
    let text = J::Obj(vec![
        ("model_type", string("kimi_k3_text")),
        ("architectures", J::Arr(vec![string("KimiK3ForCausalLM")])),
        ("hidden_size", int(s.hidden_size)),
        ("num_hidden_layers", int(s.num_hidden_layers)),
        ("vocab_size", int(s.vocab_size)),
        ("rms_norm_eps", num(s.rms_norm_eps)),
        ("num_attention_heads", int(s.num_attention_heads)),
        ("q_lora_rank", int(s.q_lora_rank)),
        ("kv_lora_rank", int(s.kv_lora_rank)),
        ("qk_nope_head_dim", int(s.qk_nope_head_dim)),
        ("qk_rope_head_dim", int(s.qk_rope_head_dim)),
        ("v_head_dim", int(s.v_head_dim)),
        ("mla_use_output_gate", boolean(s.mla_use_output_gate)),
        ("num_experts", int(s.num_experts)),
        ("num_experts_per_token", int(s.num_experts_per_token)),
        ("num_shared_experts", int(s.num_shared_experts)),
        ("routed_expert_hidden_size", int(s.routed_expert_hidden_size)),
        ("moe_intermediate_size", int(s.moe_intermediate_size)),
        ("routed_scaling_factor", num(s.routed_scaling_factor)),
        ("moe_renormalize", boolean(s.moe_renormalize)),
        ("latent_moe_use_norm", boolean(s.latent_moe_use_norm)),
        ("first_k_dense_replace", int(s.first_k_dense_replace)),
        ("intermediate_size", int(s.intermediate_size)),
        ("attn_res_block_size", int(s.attn_res_block_size)),
        ("activation_situ_beta", num(s.activation_situ_beta)),
        ("activation_situ_linear_beta", num(s.activation_situ_linear_beta)),
        ("hidden_act", string("situ")),
        ("num_nextn_predict_layers", int(0)),
        ("tie_word_embeddings", boolean(false)),
        ("torch_dtype", string("bfloat16")),
        ("linear_attn_config", linear),
    ]);
    let mut root = vec![
        ("architectures", J::Arr(vec![string("KimiK3ForConditionalGeneration")])),
        ("model_type", string("kimi_k3")),
        ("text_config", text),
        ("tie_word_embeddings", boolean(false)),
        ("torch_dtype", string("bfloat16")),
    ];
    if s.expert_storage == ExpertStorage::Mxfp4 {
        root.push((
            "quantization_config",
            J::Obj(vec![
                ("quant_method", string("mxfp4")),
                ("format", string("mxfp4")),
                ("group_size", int(32)),
                ("weight_dtype", string("e2m1")),
                ("scale_dtype", string("e8m0")),
                ("modules", J::Arr(vec![string("experts")])),
            ]),
        ));
    }
    let mut out = String::new();
    write(&J::Obj(root), 0, &mut out);
    out.push('\n');
    out
}

fn write(v: &J, depth: usize, out: &mut String) {
    let pad = |d: usize| "  ".repeat(d);
    match v {
        J::Raw(s) => out.push_str(s),
        J::Arr(items) if items.is_empty() => out.push_str("[]"),
        J::Arr(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                write(item, depth + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push(']');
        }
        J::Obj(fields) => {
            out.push_str("{\n");
            for (i, (k, item)) in fields.iter().enumerate() {
                out.push_str(&format!("{}\"{k}\": ", pad(depth + 1)));
                write(item, depth + 1, out);
                out.push_str(if i + 1 < fields.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(depth));
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key path of a JSON value, e.g. `text_config.linear_attn_config.kda_layers`.
    fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        if let serde_json::Value::Object(m) = v {
            for (k, child) in m {
                let path = format!("{prefix}{k}");
                key_paths(child, &format!("{path}."), out);
                out.push(path);
            }
        }
    }

    #[test]
    fn tiny_preset_renders_the_fixture_config_exactly_in_value() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/tiny-mxfp4/config.json");
        let want: serde_json::Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
        let got: serde_json::Value = serde_json::from_str(&render(&SynthSpec::tiny())).unwrap();
        assert_eq!(got, want);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        key_paths(&got, "", &mut a);
        key_paths(&want, "", &mut b);
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    #[test]
    fn bf16_experts_have_no_quantization_config() {
        let mut s = SynthSpec::tiny();
        s.expert_storage = ExpertStorage::Bf16;
        assert!(!render(&s).contains("quantization_config"));
    }
}
