//! Strict reader for `config.json`, in both the released nested form and the flat form.
//!
//! Owns: the lookup rule of spec §2.1 (an optional top-level `"config"` wrapper; each field
//! searched in `text_config`, then `linear_attn_config`, then the root, primary name before
//! alias), the JSON type of every field, the validation of §2.3, and the conversion of the
//! one-based `full_attn_layers` list into one [`LayerKind`] per layer.
//! Must not: substitute a default for a required field, or let a one-based index escape.
//! Easy to break: all missing fields are reported together, before any other check, so a
//! person fixes a config in one pass; `13.0` is not an integer and `"13"` is not a number.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Largest `config.json` the reader accepts.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest top-k the engine supports (bounds fixed-size routing arrays; spec §2.3).
pub const MAX_TOP_K: usize = 64;

/// Which attention a decoder layer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// Kimi Delta Attention (linear, recurrent state).
    Kda,
    /// Gated multi-head latent attention (full attention, KV cache).
    Mla,
}

/// KDA (linear attention) dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct KdaConfig {
    pub n_heads: usize,
    pub head_dim: usize,
    pub conv_kernel: usize,
    /// `g_min` of the decay gate (negative).
    pub gate_lower_bound: f32,
}

/// Gated MLA dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct MlaConfig {
    pub n_heads: usize,
    pub q_lora_rank: usize,
    pub kv_lora_rank: usize,
    pub qk_nope_head_dim: usize,
    pub qk_rope_head_dim: usize,
    pub v_head_dim: usize,
    pub use_output_gate: bool,
}

impl MlaConfig {
    /// Width of one query/key head: nope + rope.
    pub fn qk_head_dim(&self) -> usize {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }
}

/// Stable LatentMoE dimensions and routing switches.
#[derive(Debug, Clone, PartialEq)]
pub struct MoeConfig {
    pub n_experts: usize,
    pub top_k: usize,
    pub n_shared_experts: usize,
    /// Latent width L of the routed experts.
    pub latent_dim: usize,
    /// Intermediate width I of one routed expert.
    pub expert_intermediate: usize,
    pub routed_scaling_factor: f32,
    pub renormalize: bool,
    pub aggregate_norm: bool,
}

impl MoeConfig {
    /// Width of the fused shared-expert MLP.
    pub fn shared_intermediate(&self) -> usize {
        self.expert_intermediate * self.n_shared_experts
    }
}

/// The validated model configuration. Built only by [`ModelConfig::load`] / [`ModelConfig::from_json`].
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub hidden_size: usize,
    pub n_layers: usize,
    pub vocab_size: usize,
    pub rms_norm_eps: f32,
    pub kda: KdaConfig,
    pub mla: MlaConfig,
    pub moe: MoeConfig,
    /// Layers with index `< first_k_dense` use the dense FFN.
    pub first_k_dense: usize,
    pub dense_intermediate: usize,
    pub attn_res_block_size: usize,
    /// β1 of SiTU-GLU (gate cap).
    pub situ_beta_gate: f32,
    /// β2 of SiTU-GLU (up cap).
    pub situ_beta_up: f32,
    /// One entry per layer, zero-based.
    pub layer_kinds: Vec<LayerKind>,
}

impl ModelConfig {
    /// Reads and validates `path` (a `config.json`).
    pub fn load(path: &Path) -> Result<ModelConfig> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            return Err(syntax(path, "not a regular file"));
        }
        if meta.len() > MAX_CONFIG_BYTES {
            let msg = format!("{} bytes exceeds the {MAX_CONFIG_BYTES}-byte cap", meta.len());
            return Err(syntax(path, &msg));
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_json(&bytes, path)
    }

    /// Parses and validates config JSON; `path` is used only in error messages.
    pub fn from_json(bytes: &[u8], path: &Path) -> Result<ModelConfig> {
        let root = crate::json::parse_object(bytes).map_err(|m| syntax(path, &m))?;
        let root = match root.get("config") {
            Some(Value::Object(inner)) => inner.clone(),
            _ => root,
        };
        check_architecture(&root, path)?;
        let reader = FieldReader::new(&root, path);
        let cfg = reader.read_all()?;
        reader.check_extras(&cfg)?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// True when layer `layer_idx` (zero-based) starts an Attention Residual block.
    pub fn is_block_boundary(&self, layer_idx: usize) -> bool {
        layer_idx.is_multiple_of(self.attn_res_block_size)
    }

    /// True when layer `layer_idx` uses the dense FFN instead of the MoE.
    pub fn is_dense(&self, layer_idx: usize) -> bool {
        layer_idx < self.first_k_dense
    }

    /// Per-layer kinds as a string of `K`/`M`, e.g. `KKKMKKKMKKKMM`.
    pub fn layer_map(&self) -> String {
        let letter = |k: &LayerKind| match k {
            LayerKind::Kda => 'K',
            LayerKind::Mla => 'M',
        };
        self.layer_kinds.iter().map(letter).collect()
    }

    fn validate(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, reason: String| {
            Err(Error::ConfigInvalid { path: path.to_path_buf(), field: field.to_string(), reason })
        };
        let top_k = self.moe.top_k;
        if top_k == 0 || top_k > MAX_TOP_K || top_k > self.moe.n_experts {
            let n = self.moe.n_experts;
            return bad(
                "num_experts_per_token",
                format!("{top_k} must be in 1..={} (num_experts {n}, engine limit {MAX_TOP_K})", n.min(MAX_TOP_K)),
            );
        }
        if self.first_k_dense > self.n_layers {
            return bad(
                "first_k_dense_replace",
                format!("{} exceeds num_hidden_layers {}", self.first_k_dense, self.n_layers),
            );
        }
        if self.kda.gate_lower_bound >= 0.0 || !self.kda.gate_lower_bound.is_finite() {
            return bad("gate_lower_bound", format!("{} must be a finite negative number", self.kda.gate_lower_bound));
        }
        if !(self.rms_norm_eps > 0.0 && self.rms_norm_eps.is_finite()) {
            return bad("rms_norm_eps", format!("{} must be a finite positive number", self.rms_norm_eps));
        }
        for (field, v) in
            [("activation_situ_beta", self.situ_beta_gate), ("activation_situ_linear_beta", self.situ_beta_up)]
        {
            if !(v > 0.0 && v.is_finite()) {
                return bad(field, format!("{v} must be a finite positive number"));
            }
        }
        if !self.moe.routed_scaling_factor.is_finite() {
            return bad("routed_scaling_factor", "must be finite".to_string());
        }
        Ok(())
    }
}

fn syntax(path: &Path, message: &str) -> Error {
    Error::ConfigSyntax { path: path.to_path_buf(), message: message.to_string() }
}

/// Plausibility ceiling for sizes and counts (CF-03): far above K3, far below overflow.
const MAX_DIM: u64 = 1 << 24;

/// The architectures this engine runs (`model_type` at the root, in `text_config`).
const MODEL_TYPES: [&str; 2] = ["kimi_k3", "kimi_k3_text"];

/// The checkpoint dtypes `torch_dtype` may name.
const TORCH_DTYPES: [&str; 3] = ["bfloat16", "float16", "float32"];

/// Refuses a config that names another architecture or an unknown dtype (RELIABILITY
/// CF-06): where `model_type` or `torch_dtype` is given, at the root or in `text_config`,
/// it must be one this engine implements.
fn check_architecture(root: &Map<String, Value>, path: &Path) -> Result<()> {
    let text = root.get("text_config").and_then(Value::as_object);
    for (scope, obj) in [("", Some(root)), ("text_config.", text)] {
        let Some(obj) = obj else { continue };
        for (key, allowed, what) in [
            ("model_type", &MODEL_TYPES[..], "unsupported architecture"),
            ("torch_dtype", &TORCH_DTYPES[..], "unsupported dtype"),
        ] {
            let Some(v) = obj.get(key) else { continue };
            let field = format!("{scope}{key}");
            let Some(s) = v.as_str() else {
                return Err(Error::ConfigType {
                    path: path.to_path_buf(),
                    field,
                    expected: "a string",
                    found: v.to_string(),
                });
            };
            if !allowed.contains(&s) {
                let reason = format!("{what} `{s}` (this engine runs {})", allowed.join(", "));
                return Err(Error::ConfigInvalid { path: path.to_path_buf(), field, reason });
            }
        }
    }
    Ok(())
}

/// Where a field is searched first.
#[derive(Clone, Copy)]
enum Scope {
    /// `text_config`, then `linear_attn_config`, then root (spec §2.1).
    Text,
    /// `linear_attn_config` first (KDA fields; see spec §2.1's recommendation).
    Linear,
}

/// Reads typed fields, collecting the names of missing ones.
struct FieldReader<'a> {
    objects_text_first: Vec<&'a Map<String, Value>>,
    objects_linear_first: Vec<&'a Map<String, Value>>,
    path: PathBuf,
    missing: std::cell::RefCell<Vec<String>>,
}

impl<'a> FieldReader<'a> {
    fn new(root: &'a Map<String, Value>, path: &Path) -> Self {
        let text = root.get("text_config").and_then(Value::as_object);
        let linear = text
            .and_then(|t| t.get("linear_attn_config"))
            .or_else(|| root.get("linear_attn_config"))
            .and_then(Value::as_object);
        let text_first: Vec<_> = [text, linear, Some(root)].into_iter().flatten().collect();
        let linear_first: Vec<_> = [linear, text, Some(root)].into_iter().flatten().collect();
        FieldReader {
            objects_text_first: text_first,
            objects_linear_first: linear_first,
            path: path.to_path_buf(),
            missing: Default::default(),
        }
    }

    /// First hit of `name` (then `alias`) in search order; `name` is used in errors.
    fn find(&self, scope: Scope, name: &str, alias: Option<&str>) -> Option<(&'a Value, String)> {
        let objects = match scope {
            Scope::Text => &self.objects_text_first,
            Scope::Linear => &self.objects_linear_first,
        };
        for obj in objects {
            for key in std::iter::once(name).chain(alias) {
                if let Some(v) = obj.get(key) {
                    return Some((v, key.to_string()));
                }
            }
        }
        None
    }

    fn record_missing(&self, name: &str, alias: Option<&str>) {
        let label = match alias {
            Some(a) => format!("{name} (flat form: {a})"),
            None => name.to_string(),
        };
        self.missing.borrow_mut().push(label);
    }

    fn type_error(&self, field: String, expected: &'static str, v: &Value) -> Error {
        Error::ConfigType { path: self.path.clone(), field, expected, found: describe(v) }
    }

    /// A required positive integer in `1..=MAX_DIM`; `None` after recording a miss.
    fn size(&self, scope: Scope, name: &str, alias: Option<&str>) -> Result<Option<usize>> {
        self.count(scope, name, alias, 1)
    }

    /// A required integer in `min..=MAX_DIM`.
    fn count(&self, scope: Scope, name: &str, alias: Option<&str>, min: u64) -> Result<Option<usize>> {
        let Some((v, key)) = self.find(scope, name, alias) else {
            self.record_missing(name, alias);
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) if n.is_u64() || n.is_i64() => n.as_i64().unwrap_or(i64::MAX),
            _ => return Err(self.type_error(key, "an integer", v)),
        };
        if n < min as i64 || n as u64 > MAX_DIM {
            return Err(Error::ConfigInvalid {
                path: self.path.clone(),
                field: key,
                reason: format!("{n} is outside the plausible range {min}..={MAX_DIM}"),
            });
        }
        Ok(Some(n as usize))
    }

    fn number(&self, scope: Scope, name: &str, alias: Option<&str>) -> Result<Option<f32>> {
        let Some((v, key)) = self.find(scope, name, alias) else {
            self.record_missing(name, alias);
            return Ok(None);
        };
        match v.as_f64() {
            Some(x) if v.is_number() && x.is_finite() => Ok(Some(x as f32)),
            _ => Err(self.type_error(key, "a number", v)),
        }
    }

    fn optional_bool(&self, name: &str, default: bool) -> Result<bool> {
        match self.find(Scope::Text, name, None) {
            None => Ok(default),
            Some((Value::Bool(b), _)) => Ok(*b),
            Some((v, key)) => Err(self.type_error(key, "a boolean", v)),
        }
    }

    fn int_list(&self, scope: Scope, name: &str) -> Result<Option<Vec<i64>>> {
        let Some((v, key)) = self.find(scope, name, None) else {
            return Ok(None);
        };
        let items = v.as_array().ok_or_else(|| self.type_error(key.clone(), "an array of integers", v))?;
        items
            .iter()
            .map(|x| match x {
                Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.as_i64().unwrap_or(i64::MAX)),
                _ => Err(self.type_error(key.clone(), "an array of integers", v)),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    fn read_all(&self) -> Result<ModelConfig> {
        use Scope::{Linear, Text};
        let hidden_size = self.size(Text, "hidden_size", None)?;
        let n_layers = self.size(Text, "num_hidden_layers", None)?;
        let vocab_size = self.size(Text, "vocab_size", None)?;
        let rms_norm_eps = self.number(Text, "rms_norm_eps", None)?;
        let kda_heads = self.size(Linear, "num_heads", Some("kda_num_heads"))?;
        let kda_head_dim = self.size(Linear, "head_dim", Some("kda_head_dim"))?;
        let conv_kernel = self.size(Linear, "short_conv_kernel_size", None)?;
        let gate_lower_bound = self.number(Linear, "gate_lower_bound", None)?;
        let mla_heads = self.size(Text, "num_attention_heads", None)?;
        let q_lora = self.size(Text, "q_lora_rank", None)?;
        let kv_lora = self.size(Text, "kv_lora_rank", None)?;
        let nope = self.size(Text, "qk_nope_head_dim", None)?;
        let rope = self.count(Text, "qk_rope_head_dim", None, 0)?;
        let v_head = self.size(Text, "v_head_dim", None)?;
        let n_experts = self.size(Text, "num_experts", None)?;
        let top_k = self.size(Text, "num_experts_per_token", None)?;
        let n_shared = self.size(Text, "num_shared_experts", None)?;
        let latent = self.size(Text, "routed_expert_hidden_size", None)?;
        let expert_inter = self.size(Text, "moe_intermediate_size", None)?;
        let scaling = self.number(Text, "routed_scaling_factor", None)?;
        let first_dense = self.count(Text, "first_k_dense_replace", None, 0)?;
        let dense_inter = self.size(Text, "intermediate_size", None)?;
        let block = self.size(Text, "attn_res_block_size", None)?;
        let beta_gate = self.number(Text, "activation_situ_beta", Some("situ_beta"))?;
        let beta_up = self.number(Text, "activation_situ_linear_beta", Some("situ_linear_beta"))?;
        let full_attn = self.int_list(Linear, "full_attn_layers")?;
        if full_attn.is_none() {
            self.missing.borrow_mut().push("full_attn_layers".to_string());
        }
        let missing = self.missing.take();
        if !missing.is_empty() {
            return Err(Error::ConfigMissing { path: self.path.clone(), fields: missing });
        }
        // Every `Option` below is `Some`: a `None` was recorded as missing and returned above.
        let need = |x: Option<usize>| x.unwrap_or(0);
        let needf = |x: Option<f32>| x.unwrap_or(0.0);
        let n_layers = need(n_layers);
        let layer_kinds = layer_kinds(&full_attn.unwrap_or_default(), n_layers, &self.path)?;
        Ok(ModelConfig {
            hidden_size: need(hidden_size),
            n_layers,
            vocab_size: need(vocab_size),
            rms_norm_eps: needf(rms_norm_eps),
            kda: KdaConfig {
                n_heads: need(kda_heads),
                head_dim: need(kda_head_dim),
                conv_kernel: need(conv_kernel),
                gate_lower_bound: needf(gate_lower_bound),
            },
            mla: MlaConfig {
                n_heads: need(mla_heads),
                q_lora_rank: need(q_lora),
                kv_lora_rank: need(kv_lora),
                qk_nope_head_dim: need(nope),
                qk_rope_head_dim: need(rope),
                v_head_dim: need(v_head),
                use_output_gate: self.optional_bool("mla_use_output_gate", true)?,
            },
            moe: MoeConfig {
                n_experts: need(n_experts),
                top_k: need(top_k),
                n_shared_experts: need(n_shared),
                latent_dim: need(latent),
                expert_intermediate: need(expert_inter),
                routed_scaling_factor: needf(scaling),
                renormalize: self.optional_bool("moe_renormalize", true)?,
                aggregate_norm: self.optional_bool("latent_moe_use_norm", true)?,
            },
            first_k_dense: need(first_dense),
            dense_intermediate: need(dense_inter),
            attn_res_block_size: need(block),
            situ_beta_gate: needf(beta_gate),
            situ_beta_up: needf(beta_up),
            layer_kinds,
        })
    }

    /// Checks of fields the forward pass does not consume but that must agree (spec §2.2).
    fn check_extras(&self, cfg: &ModelConfig) -> Result<()> {
        let invalid = |field: &str, reason: String| Error::ConfigInvalid {
            path: self.path.clone(),
            field: field.to_string(),
            reason,
        };
        if self.optional_bool("tie_word_embeddings", false)? {
            return Err(invalid("tie_word_embeddings", "true is not supported: K3 has its own lm_head".into()));
        }
        match self.find(Scope::Linear, "use_full_rank_gate", None) {
            None | Some((Value::Bool(true), _)) => {}
            Some((Value::Bool(false), _)) => {
                return Err(invalid("use_full_rank_gate", "false is not supported (no low-rank KDA gate path)".into()))
            }
            Some((v, key)) => return Err(self.type_error(key, "a boolean", v)),
        }
        if let Some(kda_layers) = self.int_list(Scope::Linear, "kda_layers")? {
            let expected: Vec<i64> =
                (0..cfg.n_layers).filter(|&i| cfg.layer_kinds[i] == LayerKind::Kda).map(|i| i as i64 + 1).collect();
            let mut got = kda_layers.clone();
            got.sort_unstable();
            if got != expected {
                return Err(invalid(
                    "kda_layers",
                    "must be exactly the one-based complement of full_attn_layers".into(),
                ));
            }
        }
        if let Some((q, _)) = self.find(Scope::Text, "quantization_config", None) {
            if let Some(g) = q.get("group_size") {
                if g.as_u64() != Some(32) || !(g.is_u64()) {
                    return Err(invalid(
                        "quantization_config.group_size",
                        format!("{g} is not supported (MXFP4 needs 32)"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Turns the one-based MLA list into a per-layer kind (spec §2.4).
fn layer_kinds(full_attn: &[i64], n_layers: usize, path: &Path) -> Result<Vec<LayerKind>> {
    let invalid = |reason: String| Error::ConfigInvalid {
        path: path.to_path_buf(),
        field: "full_attn_layers".to_string(),
        reason,
    };
    if full_attn.is_empty() {
        return Err(invalid("must list at least one layer".into()));
    }
    if full_attn.len() >= n_layers {
        return Err(invalid(format!(
            "has {} entries for {n_layers} layers: no KDA layer would remain",
            full_attn.len()
        )));
    }
    let mut kinds = vec![LayerKind::Kda; n_layers];
    for &one_based in full_attn {
        if one_based < 1 || one_based as u64 > n_layers as u64 {
            return Err(invalid(format!("entry {one_based} is outside 1..={n_layers} (the list is one-based)")));
        }
        let idx = (one_based - 1) as usize;
        if kinds[idx] == LayerKind::Mla {
            return Err(invalid(format!("entry {one_based} is listed twice")));
        }
        kinds[idx] = LayerKind::Mla;
    }
    Ok(kinds)
}

/// A short description of a JSON value for type errors.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}
