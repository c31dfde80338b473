//! The synthetic checkpoint's tensor catalogue and on-disk order (spec §6.2, §6.4, §6.6).
//!
//! Owns: which tensors exist for a config (names from `model::names` only), their shapes,
//! dtypes and value recipes, the shard each lives in (one per decoder layer, then one for
//! the model-level tensors), the data order inside a shard (trunk F32 group, trunk BF16
//! group, each sorted by name, then routed experts sorted by name) and the header bytes.
//! Must not: spell a tensor name (use `model::names`), or place an expert tensor before
//! a trunk tensor: each layer's trunk must stay one contiguous run and each expert's
//! tensors one contiguous span.
//! Easy to break: experts sort as 0, 1, 10, 100, … (by name, like the release); `.` sorts
//! before every digit, which is what keeps one expert's six tensors together.

use super::fill::Init;
use super::spec::{ExpertStorage, SynthSpec};
use k3_engine::advanced::model::names::{self, ExpertProj};
use k3_io::config::{LayerKind, ModelConfig};
use k3_io::format::Dtype;

/// σ of every BF16 trunk matrix, the embedding and the head.
const MATRIX_STD: f32 = 0.02;
/// σ of BF16 routed experts (the released MXFP4 sample has RMS ≈ 1.82/64).
const EXPERT_STD: f32 = 0.0285;
/// Norm gains: 1 + N(0, NORM_NOISE²).
const NORM_NOISE: f32 = 0.05;
const ATTN_RES_PROJ_STD: f32 = 0.02;
const A_LOG_STD: f32 = 0.5;
const DT_BIAS_STD: f32 = 1.0;
const CONV_STD: f32 = 0.3;
const ROUTER_BIAS_STD: f32 = 0.01;
/// `A_log` is padded past H by this many zeros at most (K3: 96 heads stored as 128).
const A_LOG_MAX_PAD: usize = 32;

const MATRIX: Init = Init::Normal { mean: 0.0, std: MATRIX_STD };
const NORM: Init = Init::Normal { mean: 1.0, std: NORM_NOISE };

/// One tensor to write.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TensorPlan {
    pub(crate) name: String,
    pub(crate) dtype: Dtype,
    pub(crate) shape: Vec<u64>,
    pub(crate) init: Init,
    /// True for routed-expert tensors (the streamable part).
    pub(crate) expert: bool,
}

impl TensorPlan {
    fn new(name: String, dtype: Dtype, shape: &[usize], init: Init) -> TensorPlan {
        TensorPlan { name, dtype, shape: shape.iter().map(|&d| d as u64).collect(), init, expert: false }
    }

    pub(crate) fn nbytes(&self) -> u64 {
        self.shape.iter().product::<u64>() * self.dtype.size_bytes()
    }
}

/// One shard file: name, tensors in data order, and the padded header.
#[derive(Debug, Clone)]
pub(crate) struct ShardPlan {
    pub(crate) file_name: String,
    pub(crate) tensors: Vec<TensorPlan>,
    /// The header JSON, padded with spaces to a multiple of 8 bytes.
    pub(crate) header: Vec<u8>,
}

impl ShardPlan {
    fn new(file_name: String, mut tensors: Vec<TensorPlan>) -> ShardPlan {
        let rank = |d: Dtype| if d == Dtype::F32 { 0 } else { 1 };
        tensors.sort_by(|a, b| (a.expert, rank(a.dtype), &a.name).cmp(&(b.expert, rank(b.dtype), &b.name)));
        let header = header_bytes(&tensors);
        ShardPlan { file_name, tensors, header }
    }

    pub(crate) fn data_bytes(&self) -> u64 {
        self.tensors.iter().map(TensorPlan::nbytes).sum()
    }

    /// Length prefix + header + data.
    pub(crate) fn file_bytes(&self) -> u64 {
        8 + self.header.len() as u64 + self.data_bytes()
    }
}

/// `{"name":{"dtype":…,"shape":[…],"data_offsets":[a,b]},…}` in data order, space-padded.
fn header_bytes(tensors: &[TensorPlan]) -> Vec<u8> {
    let mut offset = 0u64;
    let entries: Vec<String> = tensors
        .iter()
        .map(|t| {
            let end = offset + t.nbytes();
            let shape: Vec<String> = t.shape.iter().map(u64::to_string).collect();
            let entry = format!(
                "{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}",
                serde_json::Value::from(t.name.as_str()),
                t.dtype.name(),
                shape.join(",")
            );
            offset = end;
            entry
        })
        .collect();
    let mut header = format!("{{{}}}", entries.join(",")).into_bytes();
    header.resize(header.len().div_ceil(8) * 8, b' ');
    header
}

/// `model-{i:05}-of-{n:06}.safetensors` (one-based `i`).
pub(crate) fn shard_file_name(i: usize, n: usize) -> String {
    format!("model-{i:05}-of-{n:06}.safetensors")
}

/// Every shard of the checkpoint, in file order.
pub(crate) fn plan_shards(spec: &SynthSpec, cfg: &ModelConfig) -> Vec<ShardPlan> {
    let n = cfg.n_layers + 1;
    let mut shards: Vec<ShardPlan> =
        (0..cfg.n_layers).map(|l| ShardPlan::new(shard_file_name(l + 1, n), layer_tensors(spec, cfg, l))).collect();
    shards.push(ShardPlan::new(shard_file_name(n, n), model_tensors(cfg)));
    shards
}

fn bf16(name: String, shape: &[usize], init: Init) -> TensorPlan {
    TensorPlan::new(name, Dtype::BF16, shape, init)
}

fn f32t(name: String, shape: &[usize], init: Init) -> TensorPlan {
    TensorPlan::new(name, Dtype::F32, shape, init)
}

fn model_tensors(cfg: &ModelConfig) -> Vec<TensorPlan> {
    let (e, v) = (cfg.hidden_size, cfg.vocab_size);
    vec![
        bf16(names::embed_tokens(), &[v, e], MATRIX),
        bf16(names::lm_head(), &[v, e], MATRIX),
        bf16(names::final_norm(), &[e], NORM),
        bf16(names::output_attn_res_norm(), &[e], NORM),
        bf16(names::output_attn_res_proj(), &[1, e], Init::Normal { mean: 0.0, std: ATTN_RES_PROJ_STD }),
    ]
}

/// Every tensor of decoder layer `l` (any order; `ShardPlan::new` sorts).
pub(crate) fn layer_tensors(spec: &SynthSpec, cfg: &ModelConfig, l: usize) -> Vec<TensorPlan> {
    let e = cfg.hidden_size;
    let n = |s: &str| names::layer(l, s);
    let proj = Init::Normal { mean: 0.0, std: ATTN_RES_PROJ_STD };
    let mut t = vec![
        bf16(n(names::INPUT_NORM), &[e], NORM),
        bf16(n(names::POST_ATTN_NORM), &[e], NORM),
        bf16(n(names::ATTN_RES_NORM), &[e], NORM),
        bf16(n(names::ATTN_RES_PROJ), &[1, e], proj),
        bf16(n(names::MLP_RES_NORM), &[e], NORM),
        bf16(n(names::MLP_RES_PROJ), &[1, e], proj),
    ];
    match cfg.layer_kinds[l] {
        LayerKind::Kda => t.extend(kda_tensors(cfg, l)),
        LayerKind::Mla => t.extend(mla_tensors(cfg, l)),
    }
    if cfg.is_dense(l) {
        let i = cfg.dense_intermediate;
        t.push(bf16(n(names::DENSE_GATE), &[i, e], MATRIX));
        t.push(bf16(n(names::DENSE_UP), &[i, e], MATRIX));
        t.push(bf16(n(names::DENSE_DOWN), &[e, i], MATRIX));
    } else {
        t.extend(moe_trunk_tensors(cfg, l));
        t.extend(expert_tensors(spec.expert_storage, cfg, l));
    }
    t
}

fn kda_tensors(cfg: &ModelConfig, l: usize) -> Vec<TensorPlan> {
    let (e, h, d, k) = (cfg.hidden_size, cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
    let p = h * d;
    let n = |s: &str| names::layer(l, s);
    let conv = Init::Normal { mean: 0.0, std: CONV_STD };
    let a_log_len = h + h.min(A_LOG_MAX_PAD);
    vec![
        bf16(n(names::KDA_Q), &[p, e], MATRIX),
        bf16(n(names::KDA_K), &[p, e], MATRIX),
        bf16(n(names::KDA_V), &[p, e], MATRIX),
        bf16(n(names::KDA_G), &[p, e], MATRIX),
        bf16(n(names::KDA_O), &[e, p], MATRIX),
        f32t(n(names::KDA_Q_CONV), &[p, 1, k], conv),
        f32t(n(names::KDA_K_CONV), &[p, 1, k], conv),
        f32t(n(names::KDA_V_CONV), &[p, 1, k], conv),
        bf16(n(names::KDA_F_A), &[d, e], MATRIX),
        bf16(n(names::KDA_F_B), &[p, d], MATRIX),
        bf16(n(names::KDA_B), &[h, e], MATRIX),
        f32t(n(names::KDA_A_LOG), &[a_log_len], Init::NormalPrefix { std: A_LOG_STD, n: h as u64 }),
        f32t(n(names::KDA_DT_BIAS), &[p], Init::Normal { mean: 0.0, std: DT_BIAS_STD }),
        f32t(n(names::KDA_O_NORM), &[d], NORM),
    ]
}

fn mla_tensors(cfg: &ModelConfig, l: usize) -> Vec<TensorPlan> {
    let (e, m) = (cfg.hidden_size, &cfg.mla);
    let n = |s: &str| names::layer(l, s);
    let hv = m.n_heads * m.v_head_dim;
    let mut t = vec![
        bf16(n(names::MLA_Q_A), &[m.q_lora_rank, e], MATRIX),
        bf16(n(names::MLA_Q_A_NORM), &[m.q_lora_rank], NORM),
        bf16(n(names::MLA_Q_B), &[m.n_heads * m.qk_head_dim(), m.q_lora_rank], MATRIX),
        bf16(n(names::MLA_KV_A), &[m.kv_lora_rank + m.qk_rope_head_dim, e], MATRIX),
        bf16(n(names::MLA_KV_A_NORM), &[m.kv_lora_rank], NORM),
        bf16(n(names::MLA_KV_B), &[m.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank], MATRIX),
        bf16(n(names::MLA_O), &[e, hv], MATRIX),
    ];
    if m.use_output_gate {
        t.push(bf16(n(names::MLA_G), &[hv, e], MATRIX));
    }
    t
}

fn moe_trunk_tensors(cfg: &ModelConfig, l: usize) -> Vec<TensorPlan> {
    let (e, moe) = (cfg.hidden_size, &cfg.moe);
    let s = moe.shared_intermediate();
    let n = |s: &str| names::layer(l, s);
    vec![
        bf16(n(names::MOE_ROUTER), &[moe.n_experts, e], MATRIX),
        f32t(n(names::MOE_ROUTER_BIAS), &[moe.n_experts], Init::Normal { mean: 0.0, std: ROUTER_BIAS_STD }),
        bf16(n(names::MOE_LATENT_DOWN), &[moe.latent_dim, e], MATRIX),
        bf16(n(names::MOE_LATENT_UP), &[e, moe.latent_dim], MATRIX),
        bf16(n(names::MOE_LATENT_NORM), &[moe.latent_dim], NORM),
        bf16(n(names::MOE_SHARED_GATE), &[s, e], MATRIX),
        bf16(n(names::MOE_SHARED_UP), &[s, e], MATRIX),
        bf16(n(names::MOE_SHARED_DOWN), &[e, s], MATRIX),
    ]
}

/// The tensors of one routed expert (6 for MXFP4, 3 for BF16).
pub(crate) fn one_expert(storage: ExpertStorage, cfg: &ModelConfig, l: usize, expert: usize) -> Vec<TensorPlan> {
    let (lat, i) = (cfg.moe.latent_dim, cfg.moe.expert_intermediate);
    let mut t = Vec::new();
    for (proj, rows, cols) in [(ExpertProj::W1, i, lat), (ExpertProj::W2, lat, i), (ExpertProj::W3, i, lat)] {
        let name = |part: &str| names::expert(l, expert, proj, part);
        match storage {
            ExpertStorage::Mxfp4 => {
                t.push(TensorPlan::new(name("weight_packed"), Dtype::U8, &[rows, cols / 2], Init::Mxfp4Packed));
                t.push(TensorPlan::new(name("weight_scale"), Dtype::U8, &[rows, cols / 32], Init::Mxfp4Scale));
            }
            ExpertStorage::Bf16 => {
                t.push(bf16(name("weight"), &[rows, cols], Init::Normal { mean: 0.0, std: EXPERT_STD }));
            }
        }
    }
    t.iter_mut().for_each(|x| x.expert = true);
    t
}

fn expert_tensors(storage: ExpertStorage, cfg: &ModelConfig, l: usize) -> Vec<TensorPlan> {
    (0..cfg.moe.n_experts).flat_map(|x| one_expert(storage, cfg, l, x)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k3_expert_is_17547264_bytes_and_layer_counts_match_the_release() {
        let spec = SynthSpec::k3_mid();
        let cfg = spec.validate().unwrap();
        let bytes: u64 = one_expert(ExpertStorage::Mxfp4, &cfg, 1, 0).iter().map(TensorPlan::nbytes).sum();
        assert_eq!(bytes, 17_547_264);
        let trunk = |l| layer_tensors(&spec, &cfg, l).into_iter().filter(|t| !t.expert).collect::<Vec<_>>();
        // Spec §6.4: layer 0 = 23, KDA MoE = 28, MLA MoE = 22 trunk tensors.
        assert_eq!([trunk(0).len(), trunk(1).len(), trunk(2).len()], [23, 28, 22]);
        // Spec §6.5: the MoE trunk runs of real K3 (same per-layer dims, 896-expert router).
        let run = |l| trunk(l).iter().map(TensorPlan::nbytes).sum::<u64>();
        let router_delta = (896 - 96) * (7168 * 2 + 4);
        assert_eq!(run(1) + router_delta, 1_267_744_256);
        assert_eq!(run(2) + router_delta, 844_335_616);
    }

    #[test]
    fn header_is_padded_to_eight_and_sorted_by_group() {
        let spec = SynthSpec::tiny();
        let shards = plan_shards(&spec, &spec.validate().unwrap());
        assert_eq!(shards.len(), 14);
        assert_eq!(shards[13].file_name, "model-00014-of-000014.safetensors");
        for s in &shards {
            assert_eq!(s.header.len() % 8, 0);
            let first_expert = s.tensors.iter().position(|t| t.expert).unwrap_or(s.tensors.len());
            assert!(s.tensors[first_expert..].iter().all(|t| t.expert));
        }
    }
}
