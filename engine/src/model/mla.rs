//! Gated multi-head latent attention: weights, KV cache and the layer (spec §4.4).
//!
//! Owns: query and KV-latent projections with their norms, the expanded per-position
//! cache (`k_nope | v` per head, plus the shared `k_rope`), causal softmax attention and
//! the output gate.
//! Must not: rotate anything (NoPE), normalise or per-head `k_rope`, or norm the output.
//! Easy to break: the score scale is `1/sqrt(nope + rope)`, not `1/sqrt(nope)`; the rope
//! slots are scored even though they are never rotated.

use crate::config::ModelConfig;
use crate::error::Result;
use crate::kernels::{rmsnorm, sigmoid};
use crate::model::bind::Binder;
use crate::model::matrix::Matrix;
use crate::model::names;
use crate::model::softmax::softmax_weights;

/// One MLA layer's weights (`H` heads, `qh = nope + rope`).
pub struct MlaWeights {
    /// `[q_lora, E]`.
    q_a: Matrix,
    q_a_norm: Vec<f32>,
    /// `[H·qh, q_lora]`.
    q_b: Matrix,
    /// `[kv_lora + rope, E]`.
    kv_a: Matrix,
    kv_a_norm: Vec<f32>,
    /// `[H·(nope + v), kv_lora]`.
    kv_b: Matrix,
    /// `[E, H·v]`.
    o: Matrix,
    /// `[H·v, E]`, absent when `mla_use_output_gate` is false.
    g: Option<Matrix>,
}

impl MlaWeights {
    pub fn bind(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Self> {
        let m = &cfg.mla;
        let e = cfg.hidden_size;
        let n = |s: &str| names::layer(layer_idx, s);
        let gate =
            if m.use_output_gate { Some(b.matrix(&n(names::MLA_G), m.n_heads * m.v_head_dim, e)?) } else { None };
        Ok(MlaWeights {
            q_a: b.matrix(&n(names::MLA_Q_A), m.q_lora_rank, e)?,
            q_a_norm: b.vector(&n(names::MLA_Q_A_NORM), m.q_lora_rank)?,
            q_b: b.matrix(&n(names::MLA_Q_B), m.n_heads * m.qk_head_dim(), m.q_lora_rank)?,
            kv_a: b.matrix(&n(names::MLA_KV_A), m.kv_lora_rank + m.qk_rope_head_dim, e)?,
            kv_a_norm: b.vector(&n(names::MLA_KV_A_NORM), m.kv_lora_rank)?,
            kv_b: b.matrix(&n(names::MLA_KV_B), m.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank)?,
            o: b.matrix(&n(names::MLA_O), e, m.n_heads * m.v_head_dim)?,
            g: gate,
        })
    }
}

/// Per-sequence MLA cache: for every past position, the expanded `[H][nope | v]` and the
/// shared `k_rope`.
#[derive(Clone, Default)]
pub struct MlaCache {
    kv: Vec<f32>,
    k_rope: Vec<f32>,
    n_positions: usize,
}

impl MlaCache {
    /// An empty cache with room for exactly `positions` positions, so growing to them
    /// never reallocates (the memory plan reserved this much, not a doubling more).
    pub fn with_capacity(cfg: &ModelConfig, positions: usize) -> Self {
        let m = &cfg.mla;
        MlaCache {
            kv: Vec::with_capacity(positions * m.n_heads * (m.qk_nope_head_dim + m.v_head_dim)),
            k_rope: Vec::with_capacity(positions * m.qk_rope_head_dim),
            n_positions: 0,
        }
    }

    /// Forgets every position, keeping the reserved room.
    pub fn clear(&mut self) {
        self.kv.clear();
        self.k_rope.clear();
        self.n_positions = 0;
    }

    /// Forgets every position from `positions` on (a tentative pass's rejected ones).
    pub fn truncate(&mut self, cfg: &ModelConfig, positions: usize) {
        let m = &cfg.mla;
        if positions < self.n_positions {
            self.kv.truncate(positions * m.n_heads * (m.qk_nope_head_dim + m.v_head_dim));
            self.k_rope.truncate(positions * m.qk_rope_head_dim);
            self.n_positions = positions;
        }
    }

    /// Floats each position holds: `(kv, k_rope)`.
    pub(crate) fn floats_per_position(cfg: &ModelConfig) -> (usize, usize) {
        let m = &cfg.mla;
        (m.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.qk_rope_head_dim)
    }

    /// The cached numbers: `(kv, k_rope)` of every position held.
    pub(crate) fn cached(&self) -> (&[f32], &[f32]) {
        (&self.kv, &self.k_rope)
    }

    /// Replaces the cache with `positions` positions of `kv` and `k_rope` (each exactly
    /// [`MlaCache::floats_per_position`] per position), within the reserved room.
    pub(crate) fn restore(&mut self, positions: usize, kv: &[f32], k_rope: &[f32]) {
        self.clear();
        self.kv.extend_from_slice(kv);
        self.k_rope.extend_from_slice(k_rope);
        self.n_positions = positions;
    }

    /// True when both hold the same positions, bit for bit.
    pub fn same_bits(&self, other: &MlaCache) -> bool {
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        self.n_positions == other.n_positions
            && bits(&self.kv) == bits(&other.kv)
            && bits(&self.k_rope) == bits(&other.k_rope)
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.n_positions
    }

    /// True when no position is cached.
    pub fn is_empty(&self) -> bool {
        self.n_positions == 0
    }
}

impl MlaWeights {
    /// Applies this MLA layer to `n` new tokens `xs` (`[n × E]`) after the cached
    /// positions, appending them to `cache`; writes `[n × E]` into `out`.
    pub fn forward(&self, cfg: &ModelConfig, xs: &[f32], cache: &mut MlaCache, out: &mut [f32]) {
        let n = xs.len() / cfg.hidden_size;
        // Queries `[n × H·qh]`, then the new positions' keys and values into the cache.
        let q = self.queries(cfg, xs);
        let past = self.append_to_cache(cfg, xs, cache);
        // Causal softmax attention of each new token over every visible position.
        let mut attn = attend(cfg, &q, cache, past, n);
        // Output gate (when the layer has one), then the output projection.
        if let Some(g) = &self.g {
            let mut gate = vec![0.0f32; attn.len()];
            g.matmul(xs, &mut gate);
            for (a, &gv) in attn.iter_mut().zip(&gate) {
                *a *= sigmoid(gv);
            }
        }
        self.o.matmul(&attn, out);
    }

    /// `q = Wqb · RMSNorm(Wqa x)` for every token, `[n × H·qh]`.
    fn queries(&self, cfg: &ModelConfig, xs: &[f32]) -> Vec<f32> {
        let m = &cfg.mla;
        let n = xs.len() / cfg.hidden_size;
        let mut q_lat = vec![0.0f32; n * m.q_lora_rank];
        self.q_a.matmul(xs, &mut q_lat);
        let mut q_normed = vec![0.0f32; n * m.q_lora_rank];
        for (src, dst) in q_lat.chunks(m.q_lora_rank).zip(q_normed.chunks_mut(m.q_lora_rank)) {
            rmsnorm(src, &self.q_a_norm, cfg.rms_norm_eps, dst);
        }
        let mut q = vec![0.0f32; n * m.n_heads * m.qk_head_dim()];
        self.q_b.matmul(&q_normed, &mut q);
        q
    }

    /// Projects the new tokens to the latent, normalises it (not `k_rope`), expands it to
    /// `[H][nope | v]` and appends both to `cache`. Returns the positions held before.
    fn append_to_cache(&self, cfg: &ModelConfig, xs: &[f32], cache: &mut MlaCache) -> usize {
        let m = &cfg.mla;
        let (lora, rope) = (m.kv_lora_rank, m.qk_rope_head_dim);
        let n = xs.len() / cfg.hidden_size;
        let kv_w = lora + rope;
        let mut c = vec![0.0f32; n * kv_w];
        self.kv_a.matmul(xs, &mut c);
        let mut latent = vec![0.0f32; n * lora];
        for (t, row) in c.chunks(kv_w).enumerate() {
            rmsnorm(&row[..lora], &self.kv_a_norm, cfg.rms_norm_eps, &mut latent[t * lora..(t + 1) * lora]);
            cache.k_rope.extend_from_slice(&row[lora..]);
        }
        let mut kv_new = vec![0.0f32; n * m.n_heads * (m.qk_nope_head_dim + m.v_head_dim)];
        self.kv_b.matmul(&latent, &mut kv_new);
        cache.kv.extend_from_slice(&kv_new);
        let past = cache.n_positions;
        cache.n_positions += n;
        past
    }
}

/// Causal attention of the `n` new tokens (queries `q`, `[n × H·qh]`, the first after
/// `past` cached positions) over `cache`; returns the head outputs `[n × H·v]`.
fn attend(cfg: &ModelConfig, q: &[f32], cache: &MlaCache, past: usize, n: usize) -> Vec<f32> {
    let m = &cfg.mla;
    let (heads, nope, rope, vd) = (m.n_heads, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim);
    let (qh, kvd) = (m.qk_head_dim(), nope + vd);
    let scale = 1.0 / (qh as f32).sqrt();
    let mut attn = vec![0.0f32; n * heads * vd];
    let mut scores = Vec::with_capacity(cache.n_positions);
    for t in 0..n {
        let visible = past + t + 1;
        for head in 0..heads {
            let qv = &q[(t * heads + head) * qh..(t * heads + head + 1) * qh];
            scores.clear();
            for s in 0..visible {
                let kh = &cache.kv[(s * heads + head) * kvd..];
                let kr = &cache.k_rope[s * rope..(s + 1) * rope];
                let mut acc = 0.0f64;
                for i in 0..nope {
                    acc += f64::from(qv[i]) * f64::from(kh[i]);
                }
                for i in 0..rope {
                    acc += f64::from(qv[nope + i]) * f64::from(kr[i]);
                }
                scores.push(acc as f32 * scale);
            }
            softmax_weights(&mut scores);
            let o = &mut attn[(t * heads + head) * vd..(t * heads + head + 1) * vd];
            for (s, &p) in scores.iter().enumerate() {
                let vh = &cache.kv[(s * heads + head) * kvd + nope..(s * heads + head) * kvd + kvd];
                for (oj, &vj) in o.iter_mut().zip(vh) {
                    *oj += p * vj;
                }
            }
        }
    }
    attn
}
