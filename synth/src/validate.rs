//! A spec checked before a byte is written: rendered to `config.json` and read back with
//! the engine's own [`ModelConfig`] reader (so a spec the engine would refuse is refused
//! here), its sizes bounded, and the MXFP4 width rule.
//!
//! Owns: [`SynthSpec::validate`].

use std::path::Path;

use k3_engine::{Error, Result};
use k3_io::config::ModelConfig;

use crate::spec::{check_layers, ExpertStorage, SynthSpec, MAX_SYNTH_EXPERTS};

impl SynthSpec {
    /// Checks the spec with the engine's own config reader, plus the MXFP4 width rule;
    /// returns the config the checkpoint will have.
    pub fn validate(&self) -> Result<ModelConfig> {
        let path = Path::new("<synth spec>");
        // Every size that sizes an allocation is bounded before the config is rendered.
        let invalid = |field: &str, reason: String| Error::ConfigInvalid {
            path: path.to_path_buf(),
            field: field.into(),
            reason,
        };
        check_layers(self.num_hidden_layers).map_err(|r| invalid("num_hidden_layers", r))?;
        if self.full_attn_layers.len() > self.num_hidden_layers {
            let reason = format!("{} entries for {} layers", self.full_attn_layers.len(), self.num_hidden_layers);
            return Err(invalid("full_attn_layers", reason));
        }
        let json = crate::config_json::render(self);
        let cfg = ModelConfig::from_json(json.as_bytes(), path)?;
        // Every expert is a few tensors in the plan: bound the count before planning them.
        let moe_layers = cfg.n_layers.saturating_sub(cfg.first_k_dense) as u64;
        let experts = moe_layers.saturating_mul(cfg.moe.n_experts as u64);
        if experts > MAX_SYNTH_EXPERTS {
            return Err(Error::ConfigInvalid {
                path: path.to_path_buf(),
                field: "num_experts".into(),
                reason: format!(
                    "{} × {moe_layers} MoE layers = {experts} routed experts, above synth's limit of {MAX_SYNTH_EXPERTS}",
                    cfg.moe.n_experts
                ),
            });
        }
        if self.expert_storage == ExpertStorage::Mxfp4 {
            for (field, v) in [
                ("routed_expert_hidden_size", self.routed_expert_hidden_size),
                ("moe_intermediate_size", self.moe_intermediate_size),
            ] {
                if !v.is_multiple_of(32) {
                    return Err(Error::ConfigInvalid {
                        path: path.to_path_buf(),
                        field: field.to_string(),
                        reason: format!("{v} must be a multiple of 32 for MXFP4 experts"),
                    });
                }
            }
        }
        Ok(cfg)
    }
}
