//! Config values from JSON applied onto a [`SynthSpec`] (`k3 synth --config FILE`).
//!
//! Owns: which keys a JSON override may hold (the `config.json` field names, flat or in the
//! released nested form, their flat-form aliases, plus `seed` and `expert_storage`), the
//! JSON type of each, and which descriptive keys of a real `config.json` are ignored.
//! Must not: silently ignore an unknown key (a typo would otherwise make a different
//! checkpoint than asked for).
//! Easy to break: `num_hidden_layers` without `full_attn_layers` resets the MLA layers to
//! K3's pattern for the new depth; with both, the explicit list wins whatever the key order.

use std::path::Path;

use serde_json::{Map, Value};

use super::spec::{ExpertStorage, SynthSpec};
use k3_engine::{Error, Result};

/// Keys of a real `config.json` that carry no synth setting.
const IGNORED: [&str; 9] = [
    "architectures",
    "model_type",
    "hidden_act",
    "torch_dtype",
    "num_nextn_predict_layers",
    "use_full_rank_gate",
    "kda_layers",
    "vision_config",
    "media_placeholder_token_id",
];

fn size_field<'a>(s: &'a mut SynthSpec, key: &str) -> Option<&'a mut usize> {
    Some(match key {
        "hidden_size" => &mut s.hidden_size,
        "vocab_size" => &mut s.vocab_size,
        "num_heads" | "kda_num_heads" => &mut s.kda_num_heads,
        "head_dim" | "kda_head_dim" => &mut s.kda_head_dim,
        "short_conv_kernel_size" => &mut s.short_conv_kernel_size,
        "num_attention_heads" => &mut s.num_attention_heads,
        "q_lora_rank" => &mut s.q_lora_rank,
        "kv_lora_rank" => &mut s.kv_lora_rank,
        "qk_nope_head_dim" => &mut s.qk_nope_head_dim,
        "qk_rope_head_dim" => &mut s.qk_rope_head_dim,
        "v_head_dim" => &mut s.v_head_dim,
        "num_experts" => &mut s.num_experts,
        "num_experts_per_token" => &mut s.num_experts_per_token,
        "num_shared_experts" => &mut s.num_shared_experts,
        "routed_expert_hidden_size" => &mut s.routed_expert_hidden_size,
        "moe_intermediate_size" => &mut s.moe_intermediate_size,
        "first_k_dense_replace" => &mut s.first_k_dense_replace,
        "intermediate_size" => &mut s.intermediate_size,
        "attn_res_block_size" => &mut s.attn_res_block_size,
        _ => return None,
    })
}

fn number_field<'a>(s: &'a mut SynthSpec, key: &str) -> Option<&'a mut f64> {
    Some(match key {
        "rms_norm_eps" => &mut s.rms_norm_eps,
        "gate_lower_bound" => &mut s.gate_lower_bound,
        "routed_scaling_factor" => &mut s.routed_scaling_factor,
        "activation_situ_beta" | "situ_beta" => &mut s.activation_situ_beta,
        "activation_situ_linear_beta" | "situ_linear_beta" => &mut s.activation_situ_linear_beta,
        _ => return None,
    })
}

fn bool_field<'a>(s: &'a mut SynthSpec, key: &str) -> Option<&'a mut bool> {
    Some(match key {
        "mla_use_output_gate" => &mut s.mla_use_output_gate,
        "moe_renormalize" => &mut s.moe_renormalize,
        "latent_moe_use_norm" => &mut s.latent_moe_use_norm,
        _ => return None,
    })
}

/// Applies the JSON object in `bytes` (read from `path`, used in errors) onto `spec`.
pub fn apply_json(spec: &mut SynthSpec, bytes: &[u8], path: &Path) -> Result<()> {
    let root = k3_io::json::parse_object(bytes)
        .map_err(|message| Error::ConfigSyntax { path: path.to_path_buf(), message })?;
    let root = match root.get("config") {
        Some(Value::Object(inner)) => inner.clone(),
        _ => root,
    };
    let text = root.get("text_config").and_then(Value::as_object);
    let linear = text
        .and_then(|t| t.get("linear_attn_config"))
        .or_else(|| root.get("linear_attn_config"))
        .and_then(Value::as_object);
    let objects: Vec<&Map<String, Value>> = [Some(&root), text, linear].into_iter().flatten().collect();
    let fields: Vec<(&String, &Value)> = objects
        .iter()
        .flat_map(|o| o.iter())
        .filter(|(k, _)| !matches!(k.as_str(), "text_config" | "linear_attn_config"))
        .collect();
    let setter = Setter { path };
    if let Some((_, v)) = fields.iter().find(|(k, _)| k.as_str() == "num_hidden_layers") {
        let n = setter.size("num_hidden_layers", v)?;
        spec.set_layers(n).map_err(|reason| Error::ConfigInvalid {
            path: path.to_path_buf(),
            field: "num_hidden_layers".into(),
            reason,
        })?;
    }
    for (key, v) in fields {
        setter.apply(spec, key, v)?;
    }
    Ok(())
}

/// Typed reads of one JSON value, with errors naming the file and the key.
struct Setter<'p> {
    path: &'p Path,
}

impl Setter<'_> {
    fn type_error(&self, key: &str, expected: &'static str, v: &Value) -> Error {
        Error::ConfigType { path: self.path.to_path_buf(), field: key.to_string(), expected, found: v.to_string() }
    }

    fn invalid(&self, key: &str, reason: String) -> Error {
        Error::ConfigInvalid { path: self.path.to_path_buf(), field: key.to_string(), reason }
    }

    fn size(&self, key: &str, v: &Value) -> Result<usize> {
        v.as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| self.type_error(key, "a non-negative integer", v))
    }

    fn apply(&self, spec: &mut SynthSpec, key: &str, v: &Value) -> Result<()> {
        if let Some(slot) = size_field(spec, key) {
            *slot = self.size(key, v)?;
        } else if let Some(slot) = number_field(spec, key) {
            *slot = v.as_f64().filter(|_| v.is_number()).ok_or_else(|| self.type_error(key, "a number", v))?;
        } else if let Some(slot) = bool_field(spec, key) {
            *slot = v.as_bool().ok_or_else(|| self.type_error(key, "a boolean", v))?;
        } else {
            self.apply_special(spec, key, v)?;
        }
        Ok(())
    }

    fn apply_special(&self, spec: &mut SynthSpec, key: &str, v: &Value) -> Result<()> {
        match key {
            "num_hidden_layers" => {} // applied first, see `apply_json`
            "seed" => spec.seed = v.as_u64().ok_or_else(|| self.type_error(key, "a non-negative integer", v))?,
            "full_attn_layers" => {
                let items = v.as_array().ok_or_else(|| self.type_error(key, "an array of integers", v))?;
                spec.full_attn_layers = items
                    .iter()
                    .map(|x| self.size(key, x))
                    .collect::<Result<Vec<_>>>()
                    .map_err(|_| self.type_error(key, "an array of integers", v))?;
            }
            "expert_storage" => {
                spec.expert_storage = match v.as_str() {
                    Some("mxfp4") => ExpertStorage::Mxfp4,
                    Some("bf16") => ExpertStorage::Bf16,
                    _ => return Err(self.type_error(key, "\"mxfp4\" or \"bf16\"", v)),
                }
            }
            "quantization_config" => spec.expert_storage = ExpertStorage::Mxfp4,
            "tie_word_embeddings" if v.as_bool() == Some(true) => {
                return Err(self.invalid(key, "true is not supported: K3 has its own lm_head".into()))
            }
            "tie_word_embeddings" => {}
            k if IGNORED.contains(&k) => {}
            _ => return Err(self.invalid(key, "not a config value a synthetic checkpoint can take".into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(json: &str) -> Result<SynthSpec> {
        let mut s = SynthSpec::tiny();
        apply_json(&mut s, json.as_bytes(), Path::new("o.json")).map(|()| s)
    }

    #[test]
    fn the_tiny_fixture_config_reproduces_the_tiny_preset() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/tiny-mxfp4/config.json");
        let mut s = SynthSpec::k3_mid();
        apply_json(&mut s, &std::fs::read(fixture).unwrap(), Path::new(fixture)).unwrap();
        assert_eq!(s, SynthSpec::tiny());
    }

    #[test]
    fn flat_keys_aliases_and_layer_reset_work() {
        let s = applied(r#"{"num_hidden_layers": 6, "kda_num_heads": 2, "situ_beta": 3.0, "seed": 9}"#).unwrap();
        assert_eq!((s.num_hidden_layers, s.full_attn_layers.clone()), (6, vec![4, 6]));
        assert_eq!((s.kda_num_heads, s.activation_situ_beta, s.seed), (2, 3.0, 9));
        let s = applied(r#"{"full_attn_layers": [2], "num_hidden_layers": 3, "expert_storage": "bf16"}"#).unwrap();
        assert_eq!((s.full_attn_layers.clone(), s.expert_storage), (vec![2], ExpertStorage::Bf16));
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused_by_name() {
        let e = applied(r#"{"hiden_size": 64}"#).unwrap_err().to_string();
        assert!(e.contains("hiden_size") && e.contains("o.json"), "{e}");
        let e = applied(r#"{"hidden_size": "64"}"#).unwrap_err().to_string();
        assert!(e.contains("hidden_size"), "{e}");
        assert!(applied(r#"{"hidden_size": 64, "hidden_size": 32}"#).is_err(), "duplicate keys");
    }
}
