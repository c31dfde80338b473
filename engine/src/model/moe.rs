//! Stable LatentMoE (spec §4.6); the MLP it runs for the shared and routed experts is
//! [`GluMlp`] in `mlp.rs`.
//!
//! Owns: the sigmoid router (bias selects, unbiased scores weight), top-k selection with
//! the lowest index winning ties, renormalisation and routed scaling, the latent
//! down/up projections, the aggregate norm, and the unweighted shared experts.
//! Must not: weight experts by biased scores, norm each expert, or feed the shared
//! experts the latent.
//! Easy to break: experts are accumulated into the latent in selection order, whatever
//! order their weights arrive in. Each expert is computed as soon as its weights are in
//! (the source's [`ExpertSource::next_ready`]), so a layer's compute runs while its other
//! experts are still being read; that order only decides when each output slot is
//! written, never what is summed or in which order.

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::kernels::{rmsnorm, sigmoid};
use crate::model::bind::Binder;
use crate::model::experts::{Demand, ExpertSource};
use crate::model::mlp::GluMlp;
use crate::model::names;
use crate::model::weight::Weight;

/// The trunk (always-used) part of one MoE layer.
pub struct MoeWeights {
    /// `[N, E]`.
    router: Weight,
    /// `[N]`, selection only.
    router_bias: Vec<f32>,
    /// `[L, E]`.
    latent_down: Weight,
    /// `[E, L]`.
    latent_up: Weight,
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
            router: b.weight(&n(names::MOE_ROUTER), moe.n_experts, e)?,
            router_bias: b.vector(&n(names::MOE_ROUTER_BIAS), moe.n_experts)?,
            latent_down: b.weight(&n(names::MOE_LATENT_DOWN), moe.latent_dim, e)?,
            latent_up: b.weight(&n(names::MOE_LATENT_UP), e, moe.latent_dim)?,
            latent_norm: b.vector(&n(names::MOE_LATENT_NORM), moe.latent_dim)?,
            shared: GluMlp {
                gate: b.weight(&n(names::MOE_SHARED_GATE), si, e)?,
                up: b.weight(&n(names::MOE_SHARED_UP), si, e)?,
                down: b.weight(&n(names::MOE_SHARED_DOWN), e, si)?,
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

impl MoeWeights {
    /// Applies this MoE (of layer `layer_idx`) to `n` tokens `xs` (`[n × E]`) → `out`
    /// (`[n × E]`), fetching routed experts from `experts` (a fetch gives up once `stop`
    /// is set). Returns each token's routing.
    pub fn forward(
        &self,
        cfg: &ModelConfig,
        layer_idx: usize,
        (experts, stop): (&dyn ExpertSource, &CancelToken),
        xs: &[f32],
        out: &mut [f32],
    ) -> Result<Vec<Routing>> {
        let (e, l, n) = (cfg.hidden_size, cfg.moe.latent_dim, xs.len() / cfg.hidden_size);
        let routings = self.route_tokens(cfg, xs, stop)?;
        // Batch prefetch as soon as routing is known: every distinct expert of this layer,
        // in first-use order. Arrival order never changes the accumulation order below.
        let wanted = expert_users(&routings);
        let demands: Vec<Demand> =
            wanted.iter().map(|w| Demand { expert_idx: w.expert_idx, uses: w.users.len() }).collect();
        experts.prefetch(layer_idx, &demands);
        // While the prefetch reads, compute what needs no routed expert: the latent
        // down-projection and the shared experts (added after the up-projection, as always).
        let mut z = vec![0.0f32; n * l];
        self.latent_down.load(stop)?.matmul(xs, &mut z);
        let mut shared = vec![0.0f32; n * e];
        self.shared.forward(cfg, xs, &mut shared, stop)?;
        let expert_out = run_experts(cfg, layer_idx, (experts, stop), routings.len(), wanted, &z)?;
        let acc_all = self.combine(cfg, &routings, &expert_out);
        self.latent_up.load(stop)?.matmul(&acc_all, out);
        for (o, &s) in out.iter_mut().zip(&shared) {
            *o += s;
        }
        Ok(routings)
    }

    /// Router logits on the full width, then [`route`] for every token of `xs` (`[n × E]`).
    fn route_tokens(&self, cfg: &ModelConfig, xs: &[f32], stop: &CancelToken) -> Result<Vec<Routing>> {
        let moe = &cfg.moe;
        let n = xs.len() / cfg.hidden_size;
        let mut logits = vec![0.0f32; n * moe.n_experts];
        self.router.load(stop)?.matmul(xs, &mut logits);
        Ok((0..n)
            .map(|t| {
                let logits_t = &logits[t * moe.n_experts..(t + 1) * moe.n_experts];
                route(logits_t, &self.router_bias, moe.top_k, moe.renormalize, moe.routed_scaling_factor)
            })
            .collect())
    }

    /// Sums each token's expert outputs (`[n][k][L]`) with its weights in selection order,
    /// whatever order the experts ran in, then norms the aggregate; returns `[n × L]`.
    fn combine(&self, cfg: &ModelConfig, routings: &[Routing], expert_out: &[f32]) -> Vec<f32> {
        let (l, k) = (cfg.moe.latent_dim, cfg.moe.top_k);
        let mut acc_all = vec![0.0f32; routings.len() * l];
        let mut normed = vec![0.0f32; l];
        for (t, r) in routings.iter().enumerate() {
            let acc = &mut acc_all[t * l..(t + 1) * l];
            for (j, &wt) in r.weights.iter().enumerate() {
                for (a, &v) in acc.iter_mut().zip(&expert_out[(t * k + j) * l..(t * k + j + 1) * l]) {
                    *a += wt * v;
                }
            }
            if cfg.moe.aggregate_norm {
                rmsnorm(acc, &self.latent_norm, cfg.rms_norm_eps, &mut normed);
                acc.copy_from_slice(&normed);
            }
        }
        acc_all
    }
}

/// One expert the tokens chose and its uses: `(t, j)` for token `t`'s `j`-th choice.
struct ExpertUsers {
    expert_idx: usize,
    users: Vec<(usize, usize)>,
}

/// Every expert the tokens chose, once each, in first-use order, with its uses.
fn expert_users(routings: &[Routing]) -> Vec<ExpertUsers> {
    let mut wanted: Vec<ExpertUsers> = Vec::new();
    for (t, r) in routings.iter().enumerate() {
        for (j, &ex) in r.experts.iter().enumerate() {
            match wanted.iter_mut().find(|w| w.expert_idx == ex) {
                Some(w) => w.users.push((t, j)),
                None => wanted.push(ExpertUsers { expert_idx: ex, users: vec![(t, j)] }),
            }
        }
    }
    wanted
}

/// Runs each `wanted` expert once for all the tokens that chose it (one fetch, batched
/// kernels) on their latents `z` (`[n × L]`), each as soon as the source has it in RAM;
/// returns the outputs `[n][k][L]`, slot `[t][j]` for token `t`'s `j`-th choice. `stop`
/// is looked at before each expert.
fn run_experts(
    cfg: &ModelConfig,
    layer_idx: usize,
    (experts, stop): (&dyn ExpertSource, &CancelToken),
    n_tokens: usize,
    mut wanted: Vec<ExpertUsers>,
    z: &[f32],
) -> Result<Vec<f32>> {
    let (l, k) = (cfg.moe.latent_dim, cfg.moe.top_k);
    let mut expert_out = vec![0.0f32; n_tokens * k * l];
    let mut pending: Vec<usize> = wanted.iter().map(|w| w.expert_idx).collect();
    while !pending.is_empty() {
        if stop.is_cancelled() {
            return Err(Error::Stopped);
        }
        let at = experts.next_ready(layer_idx, &pending, stop)?.min(pending.len() - 1);
        let ExpertUsers { expert_idx, users } = wanted.remove(at);
        pending.remove(at);
        let mlp = experts.expert_uses(layer_idx, expert_idx, users.len(), stop)?;
        let zs: Vec<f32> = users.iter().flat_map(|&(t, _)| z[t * l..(t + 1) * l].iter().copied()).collect();
        let mut ys = vec![0.0f32; users.len() * l];
        mlp.forward(cfg, &zs, &mut ys, stop)?;
        for (&(t, j), y) in users.iter().zip(ys.chunks_exact(l)) {
            expert_out[(t * k + j) * l..(t * k + j + 1) * l].copy_from_slice(y);
        }
    }
    Ok(expert_out)
}
