//! Gated multi-head latent attention: weights, the latent KV cache and the layer (spec §4.4).
//!
//! Owns: query and KV-latent projections with their norms, the per-position cache of the
//! normalised latent and the shared `k_rope` (`kv_lora + rope` floats, 2,304 bytes per
//! layer for K3, where the expanded `k_nope | v` of every head took 98,560), attention in
//! the absorbed form, and the output gate. Per head `h`, with `W_UK_h` and `W_UV_h` the
//! key and value rows of `kv_b`:
//! * the query is absorbed once per token: `q̃_h = [W_UK_hᵀ q_nope_h | q_rope_h]`
//!   (`Matrix::transposed_rows_matvec`: f64 sums in row order, rounded once);
//! * a score is one 16-lane dot of `q̃_h` with a cached row `[latent_s | k_rope_s]`
//!   (`dot_f32_queries`), times `1/sqrt(nope + rope)`;
//! * the softmax weights mix the latents in key order (`accumulate_weighted_rows_f32`),
//!   and the head's output is `W_UV_h` times that mix (the dense row contract).
//!
//! Every path (recompute, incremental, a speculative pass, a resumed state) runs this one
//! arithmetic per (token, head), whatever the chunking and thread count, so tokens and
//! logits are byte-identical across them. [`MlaWeights::forward_expanded_reference`] keeps
//! the expanded form as a plain twin for the tests that bound how far the two forms differ.
//! Must not: rotate anything (NoPE), normalise or per-head `k_rope`, norm the output, or
//! split one score or one mixed element across threads (threads take whole heads).
//! Easy to break: the score scale is `1/sqrt(nope + rope)`, not `1/sqrt(nope)`; the rope
//! slots are scored even though they are never rotated; a cached row is
//! `[latent | k_rope]`, and only its first `kv_lora` floats are mixed.

use rayon::prelude::*;

use crate::config::ModelConfig;
use crate::error::Result;
use crate::events::CancelToken;
use crate::kernels::{accumulate_weighted_rows_f32, dot_f32_queries, rmsnorm, sigmoid, widen, RowDot};
use crate::model::batch::SeqRows;
use crate::model::bind::Binder;
use crate::model::matrix::Matrix;
use crate::model::names;
use crate::model::softmax::softmax_weights;
use crate::model::weight::Weight;

/// Cached positions scored or mixed per kernel call: 8 rows of K3's 576 floats (18 KiB)
/// stay in a 32 KiB L1 cache while every head of a group passes over them
/// (`examples/latent_attention_rate`: 8 rows scored and mixed fastest of 4, 8, 16 and 32
/// on this AVX2 machine).
pub const POSITION_BLOCK: usize = 8;
/// The most score bytes one task of heads holds at once: at long contexts a task takes
/// fewer heads (and reads the cache more often) rather than more memory.
pub const SCORE_SCRATCH_BYTES: usize = 16 << 20;

/// One MLA layer's weights (`H` heads, `qh = nope + rope`).
pub struct MlaWeights {
    /// `[q_lora, E]`.
    q_a: Weight,
    q_a_norm: Vec<f32>,
    /// `[H·qh, q_lora]`.
    q_b: Weight,
    /// `[kv_lora + rope, E]`.
    kv_a: Weight,
    kv_a_norm: Vec<f32>,
    /// `[H·(nope + v), kv_lora]`: per head, `nope` key rows then `v` value rows.
    kv_b: Weight,
    /// `[E, H·v]`.
    o: Weight,
    /// `[H·v, E]`, absent when `mla_use_output_gate` is false.
    g: Option<Weight>,
}

impl MlaWeights {
    pub fn bind(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Self> {
        let m = &cfg.mla;
        let e = cfg.hidden_size;
        let n = |s: &str| names::layer(layer_idx, s);
        let gate =
            if m.use_output_gate { Some(b.weight(&n(names::MLA_G), m.n_heads * m.v_head_dim, e)?) } else { None };
        Ok(MlaWeights {
            q_a: b.weight(&n(names::MLA_Q_A), m.q_lora_rank, e)?,
            q_a_norm: b.vector(&n(names::MLA_Q_A_NORM), m.q_lora_rank)?,
            q_b: b.weight(&n(names::MLA_Q_B), m.n_heads * m.qk_head_dim(), m.q_lora_rank)?,
            kv_a: b.weight(&n(names::MLA_KV_A), m.kv_lora_rank + m.qk_rope_head_dim, e)?,
            kv_a_norm: b.vector(&n(names::MLA_KV_A_NORM), m.kv_lora_rank)?,
            kv_b: b.weight(&n(names::MLA_KV_B), m.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank)?,
            o: b.weight(&n(names::MLA_O), e, m.n_heads * m.v_head_dim)?,
            g: gate,
        })
    }
}

/// Per-sequence MLA cache: for every past position, one row `[latent | k_rope]`: the
/// normalised KV latent and the shared, un-normalised `k_rope`.
#[derive(Clone, Default)]
pub struct MlaCache {
    rows: Vec<f32>,
    n_positions: usize,
}

impl MlaCache {
    /// An empty cache with room for exactly `positions` positions, so growing to them
    /// never reallocates (the memory plan reserved this much, not a doubling more). The
    /// room is reserved, not touched: pages are taken as positions fill.
    pub fn with_capacity(cfg: &ModelConfig, positions: usize) -> Self {
        MlaCache { rows: Vec::with_capacity(positions * Self::floats_per_position(cfg)), n_positions: 0 }
    }

    /// Appends whole cache rows (`[k][kv_lora + rope]`, as [`MlaWeights`] makes them);
    /// returns the positions held before.
    fn append_rows(&mut self, cfg: &ModelConfig, rows: &[f32]) -> usize {
        let past = self.n_positions;
        self.rows.extend_from_slice(rows);
        self.n_positions = past + rows.len() / Self::floats_per_position(cfg);
        past
    }

    /// Forgets every position, keeping the reserved room.
    pub fn clear(&mut self) {
        self.rows.clear();
        self.n_positions = 0;
    }

    /// Forgets every position from `positions` on (a tentative pass's rejected ones).
    pub fn truncate(&mut self, cfg: &ModelConfig, positions: usize) {
        if positions < self.n_positions {
            self.rows.truncate(positions * Self::floats_per_position(cfg));
            self.n_positions = positions;
        }
    }

    /// Floats each position holds: `kv_lora + rope`.
    pub fn floats_per_position(cfg: &ModelConfig) -> usize {
        cfg.mla.kv_lora_rank + cfg.mla.qk_rope_head_dim
    }

    /// The cached rows of every position held, `[positions][kv_lora + rope]`.
    pub(crate) fn cached(&self) -> &[f32] {
        &self.rows
    }

    /// Replaces the cache with `positions` positions of `rows` (exactly
    /// [`MlaCache::floats_per_position`] each), within the reserved room.
    pub(crate) fn restore(&mut self, positions: usize, rows: &[f32]) {
        self.clear();
        self.rows.extend_from_slice(rows);
        self.n_positions = positions;
    }

    /// True when both hold the same positions, bit for bit.
    pub fn same_bits(&self, other: &MlaCache) -> bool {
        self.n_positions == other.n_positions
            && self.rows.len() == other.rows.len()
            && self.rows.iter().zip(&other.rows).all(|(a, b)| a.to_bits() == b.to_bits())
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
    /// positions, appending them to `cache`; writes `[n × E]` into `out`. Each projection
    /// is loaded when used and let go before the next (`kv_b` is held from absorbing the
    /// queries to the head outputs, while nothing else is loaded); a failed or stopped
    /// piece read is the error.
    pub fn forward(
        &self,
        cfg: &ModelConfig,
        xs: &[f32],
        cache: &mut MlaCache,
        out: &mut [f32],
        stop: &CancelToken,
    ) -> Result<()> {
        let rows = 0..xs.len() / cfg.hidden_size;
        self.forward_batch(cfg, xs, &mut [SeqRows { memory: cache, rows }], out, stop)
    }

    /// [`MlaWeights::forward`] for several sequences at once: `xs` holds each sequence's new
    /// tokens at its rows (`[rows × E]`), each sequence's cache grows by its own rows and
    /// its tokens attend only over it. The projections run on every row at once (one read
    /// of each weight); each row's numbers are those of its sequence alone.
    pub fn forward_batch(
        &self,
        cfg: &ModelConfig,
        xs: &[f32],
        seqs: &mut [SeqRows<'_, MlaCache>],
        out: &mut [f32],
        stop: &CancelToken,
    ) -> Result<()> {
        let m = &cfg.mla;
        let (n, lora, width) = (xs.len() / cfg.hidden_size, m.kv_lora_rank, MlaCache::floats_per_position(cfg));
        // Queries `[n × H·qh]`, then the new positions' latents into each sequence's cache.
        let q = self.queries(cfg, xs, stop)?;
        let latents = self.latent_rows(cfg, xs, stop)?;
        // Each query absorbed into latent space, attended over its sequence's positions.
        let kv_b = self.kv_b.load(stop)?;
        let absorbed = absorb_queries(cfg, &kv_b, &q, n);
        let mut mixed = vec![0.0f32; m.n_heads * n * lora];
        for seq in seqs.iter_mut() {
            let past = seq.memory.append_rows(cfg, &latents[seq.span(width)]);
            let own = &absorbed[seq.rows.start * m.n_heads * width..seq.rows.end * m.n_heads * width];
            let seq_mixed = attend_latent(cfg, own, seq.memory, past, seq.len());
            // `[H][len][lora]` into the batch's `[H][n][lora]`.
            for (h, head) in seq_mixed.chunks_exact(seq.len() * lora).enumerate() {
                mixed[(h * n + seq.rows.start) * lora..(h * n + seq.rows.end) * lora].copy_from_slice(head);
            }
        }
        let attn = head_outputs(cfg, &kv_b, &mixed, n);
        drop(kv_b);
        self.gate_and_project(xs, attn, out, stop)
    }

    /// The expanded form, as a plain twin for tests: every cached position's latent is
    /// expanded with `kv_b` to each head's `k_nope` and `v`, scored with one sequential
    /// f64 sum over `nope` then `rope`, and the values mixed in key order (the engine's
    /// arithmetic before the latent cache). Appends to `cache` like [`MlaWeights::forward`].
    pub fn forward_expanded_reference(
        &self,
        cfg: &ModelConfig,
        xs: &[f32],
        cache: &mut MlaCache,
        out: &mut [f32],
    ) -> Result<()> {
        let stop = &CancelToken::new();
        let m = &cfg.mla;
        let (heads, nope, rope, vd, lora) =
            (m.n_heads, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank);
        let (qh, kvd, width) = (m.qk_head_dim(), nope + vd, lora + rope);
        let n = xs.len() / cfg.hidden_size;
        let q = self.queries(cfg, xs, stop)?;
        let past = self.append_to_cache(cfg, xs, cache, stop)?;
        let positions = cache.len();
        let mut kv = vec![0.0f32; positions * heads * kvd];
        let kv_b = self.kv_b.load(stop)?;
        for (s, row) in cache.rows.chunks_exact(width).enumerate() {
            kv_b.matvec(&row[..lora], &mut kv[s * heads * kvd..(s + 1) * heads * kvd]);
        }
        let scale = 1.0 / (qh as f32).sqrt();
        let mut attn = vec![0.0f32; n * heads * vd];
        for t in 0..n {
            for h in 0..heads {
                let qv = &q[(t * heads + h) * qh..(t * heads + h + 1) * qh];
                let mut scores: Vec<f32> = (0..past + t + 1)
                    .map(|s| {
                        let kh = &kv[(s * heads + h) * kvd..];
                        let kr = &cache.rows[s * width + lora..(s + 1) * width];
                        let mut acc = 0.0f64;
                        for i in 0..nope {
                            acc += f64::from(qv[i]) * f64::from(kh[i]);
                        }
                        for i in 0..rope {
                            acc += f64::from(qv[nope + i]) * f64::from(kr[i]);
                        }
                        acc as f32 * scale
                    })
                    .collect();
                softmax_weights(&mut scores);
                let o = &mut attn[(t * heads + h) * vd..(t * heads + h + 1) * vd];
                for (s, &p) in scores.iter().enumerate() {
                    let vh = &kv[(s * heads + h) * kvd + nope..(s * heads + h) * kvd + kvd];
                    for (oj, &vj) in o.iter_mut().zip(vh) {
                        *oj += p * vj;
                    }
                }
            }
        }
        drop(kv_b);
        self.gate_and_project(xs, attn, out, stop)
    }

    /// Output gate (when the layer has one), then the output projection.
    fn gate_and_project(&self, xs: &[f32], mut attn: Vec<f32>, out: &mut [f32], stop: &CancelToken) -> Result<()> {
        if let Some(g) = &self.g {
            let mut gate = vec![0.0f32; attn.len()];
            g.load(stop)?.matmul(xs, &mut gate);
            for (a, &gv) in attn.iter_mut().zip(&gate) {
                *a *= sigmoid(gv);
            }
        }
        self.o.load(stop)?.matmul(&attn, out);
        Ok(())
    }

    /// `q = Wqb · RMSNorm(Wqa x)` for every token, `[n × H·qh]`.
    fn queries(&self, cfg: &ModelConfig, xs: &[f32], stop: &CancelToken) -> Result<Vec<f32>> {
        let m = &cfg.mla;
        let n = xs.len() / cfg.hidden_size;
        let mut q_lat = vec![0.0f32; n * m.q_lora_rank];
        self.q_a.load(stop)?.matmul(xs, &mut q_lat);
        let mut q_normed = vec![0.0f32; n * m.q_lora_rank];
        for (src, dst) in q_lat.chunks(m.q_lora_rank).zip(q_normed.chunks_mut(m.q_lora_rank)) {
            rmsnorm(src, &self.q_a_norm, cfg.rms_norm_eps, dst);
        }
        let mut q = vec![0.0f32; n * m.n_heads * m.qk_head_dim()];
        self.q_b.load(stop)?.matmul(&q_normed, &mut q);
        Ok(q)
    }

    /// Projects the new tokens to the latent and appends one row per token to `cache`:
    /// the latent normalised, `k_rope` as projected. Returns the positions held before.
    fn append_to_cache(
        &self,
        cfg: &ModelConfig,
        xs: &[f32],
        cache: &mut MlaCache,
        stop: &CancelToken,
    ) -> Result<usize> {
        let rows = self.latent_rows(cfg, xs, stop)?;
        Ok(cache.append_rows(cfg, &rows))
    }

    /// Every token's cache row, `[n][kv_lora + rope]`: the latent normalised, `k_rope` as
    /// projected.
    fn latent_rows(&self, cfg: &ModelConfig, xs: &[f32], stop: &CancelToken) -> Result<Vec<f32>> {
        let lora = cfg.mla.kv_lora_rank;
        let width = MlaCache::floats_per_position(cfg);
        let n = xs.len() / cfg.hidden_size;
        let mut c = vec![0.0f32; n * width];
        self.kv_a.load(stop)?.matmul(xs, &mut c);
        let mut rows = vec![0.0f32; n * width];
        for (row, cached) in c.chunks(width).zip(rows.chunks_mut(width)) {
            rmsnorm(&row[..lora], &self.kv_a_norm, cfg.rms_norm_eps, &mut cached[..lora]);
            cached[lora..].copy_from_slice(&row[lora..]);
        }
        Ok(rows)
    }
}

/// Every token's query per head in latent space, widened to f64:
/// `[n][H][W_UK_hᵀ q_nope_h | q_rope_h]` (`kv_b` the layer's `[H·(nope + v), kv_lora]`).
fn absorb_queries(cfg: &ModelConfig, kv_b: &Matrix, q: &[f32], n: usize) -> Vec<f64> {
    let m = &cfg.mla;
    let (heads, nope, lora) = (m.n_heads, m.qk_nope_head_dim, m.kv_lora_rank);
    let (qh, kvd, width) = (m.qk_head_dim(), nope + m.v_head_dim, MlaCache::floats_per_position(cfg));
    let mut absorbed = vec![0.0f64; n * heads * width];
    absorbed.par_chunks_mut(width).enumerate().for_each_init(
        || vec![0.0f32; lora],
        |latent_q, (k, out)| {
            let (h, qv) = (k % heads, &q[k * qh..(k + 1) * qh]);
            kv_b.transposed_rows_matvec(h * kvd, &qv[..nope], latent_q);
            for (o, &v) in out.iter_mut().zip(latent_q.iter().chain(&qv[nope..])) {
                *o = f64::from(v);
            }
        },
    );
    absorbed
}

/// Each head's output from its mixed latent: `W_UV_h · mix`, `[n][H·v]` from `mixed`
/// (`[H][n][kv_lora]`).
fn head_outputs(cfg: &ModelConfig, kv_b: &Matrix, mixed: &[f32], n: usize) -> Vec<f32> {
    let m = &cfg.mla;
    let (heads, nope, vd, lora) = (m.n_heads, m.qk_nope_head_dim, m.v_head_dim, m.kv_lora_rank);
    let kvd = nope + vd;
    let mut attn = vec![0.0f32; n * heads * vd];
    attn.par_chunks_mut(vd).enumerate().for_each(|(k, o)| {
        let (t, h) = (k / heads, k % heads);
        let x = widen(&mixed[(h * n + t) * lora..(h * n + t + 1) * lora]);
        let first = h * kvd + nope;
        let quads = vd / 4 * 4;
        for r in (0..quads).step_by(4) {
            o[r..r + 4].copy_from_slice(&kv_b.row_dot4(first + r, &x));
        }
        for (r, v) in o.iter_mut().enumerate().skip(quads) {
            *v = kv_b.row_dot(first + r, &x);
        }
    });
    attn
}

/// Causal attention in latent space of the `n` new tokens (absorbed queries `absorbed`,
/// `[n][H][kv_lora + rope]`, the first token after `past` cached positions) over `cache`;
/// returns each head's softmax-weighted latent mix, `[H][n][kv_lora]`. Threads take whole
/// groups of heads; a group is as many heads as keep its scores within
/// [`SCORE_SCRATCH_BYTES`].
fn attend_latent(cfg: &ModelConfig, absorbed: &[f64], cache: &MlaCache, past: usize, n: usize) -> Vec<f32> {
    let heads = cfg.mla.n_heads;
    let lora = cfg.mla.kv_lora_rank;
    let visible_max = past + n;
    let by_threads = heads.div_ceil(rayon::current_num_threads().max(1));
    let by_memory = (SCORE_SCRATCH_BYTES / (4 * visible_max.max(1))).max(1);
    let group = by_threads.min(by_memory).max(1);
    let mut mixed = vec![0.0f32; heads * n * lora];
    mixed.par_chunks_mut(group * n * lora).enumerate().for_each(|(g, out)| {
        let first_head = g * group;
        let group_heads = out.len() / (n * lora);
        attend_heads(cfg, absorbed, cache, past, first_head..first_head + group_heads, out);
    });
    mixed
}

/// [`attend_latent`] for the heads `heads`, writing `[heads][n][kv_lora]` into `out`.
fn attend_heads(
    cfg: &ModelConfig,
    absorbed: &[f64],
    cache: &MlaCache,
    past: usize,
    heads: std::ops::Range<usize>,
    out: &mut [f32],
) {
    let m = &cfg.mla;
    let (lora, width) = (m.kv_lora_rank, MlaCache::floats_per_position(cfg));
    let scale = 1.0 / (m.qk_head_dim() as f32).sqrt();
    let (n_heads, group) = (m.n_heads, heads.len());
    let n = out.len() / (group * lora);
    let mut scores = vec![0.0f32; group * (past + n)];
    let mut mix = vec![0.0f32; group * lora];
    for t in 0..n {
        let visible = past + t + 1;
        let queries = &absorbed[(t * n_heads + heads.start) * width..(t * n_heads + heads.end) * width];
        let blocks = || (0..visible).step_by(POSITION_BLOCK).map(move |s| s..(s + POSITION_BLOCK).min(visible));
        for block in blocks() {
            let rows = &cache.rows[block.start * width..block.end * width];
            dot_f32_queries(rows, width, queries, &mut scores[block.start..], visible);
        }
        for head_scores in scores[..group * visible].chunks_exact_mut(visible) {
            head_scores.iter_mut().for_each(|s| *s *= scale);
            softmax_weights(head_scores);
        }
        mix.fill(0.0);
        for block in blocks() {
            let rows = &cache.rows[block.start * width..block.end * width];
            accumulate_weighted_rows_f32(&scores[block.start..], visible, rows, width, &mut mix, lora);
        }
        for (k, head_mix) in mix.chunks_exact(lora).enumerate() {
            out[(k * n + t) * lora..(k * n + t + 1) * lora].copy_from_slice(head_mix);
        }
    }
}
