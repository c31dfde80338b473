//! Stable LatentMoE and the dense FFN (spec §4.5, §4.6).
//!
//! Owns: the sigmoid router (bias selects, unbiased scores weight), top-k selection with
//! the lowest index winning ties, renormalisation and routed scaling, the latent
//! down/up projections, the aggregate norm, and the unweighted shared experts.
//! Must not: weight experts by biased scores, norm each expert, or feed the shared
//! experts the latent.
//! Easy to break: experts are accumulated into the latent in selection order, whatever
//! order their weights arrive in.

use crate::config::ModelConfig;
use crate::error::Result;
use crate::kernels::{rmsnorm, sigmoid, situ_glu};
use crate::model::bind::Binder;
use crate::model::experts::ExpertSource;
use crate::model::matrix::Matrix;
use crate::model::names;

/// A gated MLP `down · SiTU-GLU(gate·x, up·x)`: the dense FFN, the fused shared experts
/// and (in latent space) each routed expert.
pub struct GluMlp {
    /// `[I, in]`.
    pub gate: Matrix,
    /// `[I, in]`.
    pub up: Matrix,
    /// `[in, I]`.
    pub down: Matrix,
}

impl GluMlp {
    /// Applies the MLP to `n` tokens `xs` (`[n][in]`) → `out` (`[n][in]`).
    pub fn forward(&self, cfg: &ModelConfig, xs: &[f32], out: &mut [f32]) {
        let inter = self.gate.rows();
        let n = xs.len() / self.gate.cols();
        let mut g = vec![0.0f32; n * inter];
        let mut u = vec![0.0f32; n * inter];
        self.gate.matmul(xs, &mut g);
        self.up.matmul(xs, &mut u);
        let mut a = vec![0.0f32; n * inter];
        situ_glu(&g, &u, cfg.situ_beta_gate, cfg.situ_beta_up, &mut a);
        self.down.matmul(&a, out);
    }

    /// Dense FFN of layer `layer_idx`.
    pub fn bind_dense(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Self> {
        let (e, i) = (cfg.hidden_size, cfg.dense_intermediate);
        let n = |s: &str| names::layer(layer_idx, s);
        Ok(GluMlp {
            gate: b.matrix(&n(names::DENSE_GATE), i, e)?,
            up: b.matrix(&n(names::DENSE_UP), i, e)?,
            down: b.matrix(&n(names::DENSE_DOWN), e, i)?,
        })
    }
}

/// The trunk (always-used) part of one MoE layer.
pub struct MoeWeights {
    /// `[N, E]`.
    router: Matrix,
    /// `[N]`, selection only.
    router_bias: Vec<f32>,
    /// `[L, E]`.
    latent_down: Matrix,
    /// `[E, L]`.
    latent_up: Matrix,
    /// `[L]`.
    latent_norm: Vec<f32>,
    shared: GluMlp,
}

impl MoeWeights {
    pub fn bind(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Self> {
        let (e, moe) = (cfg.hidden_size, &cfg.moe);
        let si = moe.shared_intermediate();
        let n = |s: &str| names::layer(layer_idx, s);
        Ok(MoeWeights {
            router: b.matrix(&n(names::MOE_ROUTER), moe.n_experts, e)?,
            router_bias: b.vector(&n(names::MOE_ROUTER_BIAS), moe.n_experts)?,
            latent_down: b.matrix(&n(names::MOE_LATENT_DOWN), moe.latent_dim, e)?,
            latent_up: b.matrix(&n(names::MOE_LATENT_UP), e, moe.latent_dim)?,
            latent_norm: b.vector(&n(names::MOE_LATENT_NORM), moe.latent_dim)?,
            shared: GluMlp {
                gate: b.matrix(&n(names::MOE_SHARED_GATE), si, e)?,
                up: b.matrix(&n(names::MOE_SHARED_UP), si, e)?,
                down: b.matrix(&n(names::MOE_SHARED_DOWN), e, si)?,
            },
        })
    }
}

/// The experts one token uses and their combine weights, in selection order.
#[derive(Debug, Clone, PartialEq)]
pub struct Routing {
    pub experts: Vec<usize>,
    pub weights: Vec<f32>,
}

/// Routes from router logits: `s = σ(logit)`, select top-k of `s + bias` (repeated
/// arg-max, strict `>`, lowest index wins), weights from `s`, renormalised and scaled.
pub fn route(logits: &[f32], bias: &[f32], top_k: usize, renormalize: bool, scaling: f32) -> Routing {
    let scores: Vec<f32> = logits.iter().map(|&l| sigmoid(l)).collect();
    let biased: Vec<f32> = scores.iter().zip(bias).map(|(&s, &b)| s + b).collect();
    let mut taken = vec![false; scores.len()];
    let mut experts = Vec::with_capacity(top_k);
    for _ in 0..top_k {
        let mut best: Option<usize> = None;
        for (e, &c) in biased.iter().enumerate() {
            if !taken[e] && best.is_none_or(|b| c > biased[b]) {
                best = Some(e);
            }
        }
        if let Some(b) = best {
            taken[b] = true;
            experts.push(b);
        }
    }
    let mut weights: Vec<f32> = experts.iter().map(|&e| scores[e]).collect();
    if renormalize {
        let sum: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        let inv = (1.0 / (sum + 1e-20)) as f32;
        weights.iter_mut().for_each(|w| *w *= inv);
    }
    weights.iter_mut().for_each(|w| *w *= scaling);
    Routing { experts, weights }
}

/// Applies the MoE of `layer_idx` to `n` tokens `xs` (`[n][E]`) → `out` (`[n][E]`).
pub fn moe_forward(
    w: &MoeWeights,
    cfg: &ModelConfig,
    layer_idx: usize,
    experts: &dyn ExpertSource,
    xs: &[f32],
    out: &mut [f32],
) -> Result<Vec<Routing>> {
    let (e, moe) = (cfg.hidden_size, &cfg.moe);
    let (l, n) = (moe.latent_dim, xs.len() / e);
    let mut logits = vec![0.0f32; n * moe.n_experts];
    w.router.matmul(xs, &mut logits);
    let routings: Vec<Routing> = (0..n)
        .map(|t| {
            let logits_t = &logits[t * moe.n_experts..(t + 1) * moe.n_experts];
            route(logits_t, &w.router_bias, moe.top_k, moe.renormalize, moe.routed_scaling_factor)
        })
        .collect();
    // Batch prefetch as soon as routing is known: every distinct expert of this layer, in
    // first-use order. Arrival order never changes the accumulation order below.
    let mut wanted: Vec<usize> = Vec::new();
    for ex in routings.iter().flat_map(|r| r.experts.iter().copied()) {
        if !wanted.contains(&ex) {
            wanted.push(ex);
        }
    }
    experts.prefetch(layer_idx, &wanted);
    // While the prefetch reads, compute what needs no routed expert: the latent
    // down-projection and the shared experts (added after the up-projection, as always).
    let mut z = vec![0.0f32; n * l];
    w.latent_down.matmul(xs, &mut z);
    let mut shared = vec![0.0f32; n * e];
    w.shared.forward(cfg, xs, &mut shared);
    let k = moe.top_k;
    // Each expert runs once for all the tokens that chose it (one read per chunk, batched
    // kernels); its outputs wait in `expert_out[t][j]` for the per-token sum below.
    let mut expert_out = vec![0.0f32; n * k * l];
    for &ex in &wanted {
        let users: Vec<(usize, usize)> = routings
            .iter()
            .enumerate()
            .flat_map(|(t, r)| r.experts.iter().enumerate().filter(move |(_, &e)| e == ex).map(move |(j, _)| (t, j)))
            .collect();
        let mlp = experts.expert_uses(layer_idx, ex, users.len())?;
        let zs: Vec<f32> = users.iter().flat_map(|&(t, _)| z[t * l..(t + 1) * l].iter().copied()).collect();
        let mut ys = vec![0.0f32; users.len() * l];
        mlp.forward(cfg, &zs, &mut ys);
        for (&(t, j), y) in users.iter().zip(ys.chunks_exact(l)) {
            expert_out[(t * k + j) * l..(t * k + j + 1) * l].copy_from_slice(y);
        }
    }
    let mut acc_all = vec![0.0f32; n * l];
    let mut normed = vec![0.0f32; l];
    for (t, r) in routings.iter().enumerate() {
        let acc = &mut acc_all[t * l..(t + 1) * l];
        // Selection order, whatever order the experts ran in.
        for (j, &wt) in r.weights.iter().enumerate() {
            for (a, &v) in acc.iter_mut().zip(&expert_out[(t * k + j) * l..(t * k + j + 1) * l]) {
                *a += wt * v;
            }
        }
        if moe.aggregate_norm {
            rmsnorm(acc, &w.latent_norm, cfg.rms_norm_eps, &mut normed);
            acc.copy_from_slice(&normed);
        }
    }
    w.latent_up.matmul(&acc_all, out);
    for (o, &s) in out.iter_mut().zip(&shared) {
        *o += s;
    }
    Ok(routings)
}
