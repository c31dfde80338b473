//! Kimi Delta Attention: weights, per-sequence state, and the layer (spec §4.3).
//!
//! Owns: projections, ShortConv+SiLU with carried histories, per-head L2Norm, the decay
//! and β gates, the sequential delta-rule recurrence, head-wise output norm and the
//! output gate.
//! Must not: use a chunked recurrence, index `A_log` per channel, or gate before the norm.
//! Easy to break: the recurrence order (decay rows, read `u` from the decayed state, delta
//! write, read `o` from the UPDATED state) and the query pre-scale `D^-1/2` after L2Norm.
//! Also owns the tentative pass ([`KdaState::begin_tentative`]): a speculative pass journals
//! each position's raw conv inputs and delta-rule inputs, so [`KdaState::keep_tentative`]
//! can restore the state from before the pass and replay the kept positions with the same
//! functions on the same numbers: the result is the state serial decoding would have, bit
//! for bit, with no weight needed.

use crate::config::ModelConfig;
use crate::error::Result;
use crate::events::CancelToken;
use crate::kernels::{l2norm, rmsnorm, sigmoid, silu};
use crate::model::batch::SeqRows;
use crate::model::bind::Binder;
use crate::model::names;
use crate::model::weight::Weight;

/// One KDA layer's weights. `P = heads · head_dim`, `E = hidden`, `D = head_dim`.
pub struct KdaWeights {
    /// `[P, E]` each.
    q: Weight,
    k: Weight,
    v: Weight,
    /// Output gate `[P, E]`.
    g: Weight,
    /// `[E, P]`.
    o: Weight,
    /// Conv taps `[P][K]` for q, k, v.
    q_conv: Vec<f32>,
    k_conv: Vec<f32>,
    v_conv: Vec<f32>,
    /// Low-rank decay projection: `[D, E]` then `[P, D]`.
    f_a: Weight,
    f_b: Weight,
    /// β projection `[H, E]`.
    b: Weight,
    /// `[H]` (first H of the stored vector).
    a_log: Vec<f32>,
    /// `[P]`.
    dt_bias: Vec<f32>,
    /// Head-wise output norm gain `[D]`.
    o_norm: Vec<f32>,
}

impl KdaWeights {
    pub fn bind(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Self> {
        let (e, h, d, k) = (cfg.hidden_size, cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
        let p = h * d;
        let n = |s: &str| names::layer(layer_idx, s);
        Ok(KdaWeights {
            q: b.weight(&n(names::KDA_Q), p, e)?,
            k: b.weight(&n(names::KDA_K), p, e)?,
            v: b.weight(&n(names::KDA_V), p, e)?,
            g: b.weight(&n(names::KDA_G), p, e)?,
            o: b.weight(&n(names::KDA_O), e, p)?,
            q_conv: b.conv(&n(names::KDA_Q_CONV), p, k)?,
            k_conv: b.conv(&n(names::KDA_K_CONV), p, k)?,
            v_conv: b.conv(&n(names::KDA_V_CONV), p, k)?,
            f_a: b.weight(&n(names::KDA_F_A), d, e)?,
            f_b: b.weight(&n(names::KDA_F_B), p, d)?,
            b: b.weight(&n(names::KDA_B), h, e)?,
            a_log: b.a_log(&n(names::KDA_A_LOG), h)?,
            dt_bias: b.vector(&n(names::KDA_DT_BIAS), p)?,
            o_norm: b.vector(&n(names::KDA_O_NORM), d)?,
        })
    }
}

/// Per-sequence KDA memory: the state `S` and three conv histories.
#[derive(Clone, PartialEq)]
struct KdaCarried {
    /// `[H][D_k][D_v]`, row = key channel.
    s: Vec<f32>,
    /// `[P][K-1]` raw inputs, oldest first, for q, k and v.
    q_hist: Vec<f32>,
    k_hist: Vec<f32>,
    v_hist: Vec<f32>,
}

/// A tentative pass's record: the carried memory before it, and per position the raw
/// conv inputs `[q | k | v]` (`3P`) and per head the delta-rule inputs `[k | v | α | β]`
/// (`H·(3D + 1)`).
#[derive(Clone)]
struct KdaJournal {
    before: KdaCarried,
    raw: Vec<f32>,
    steps: Vec<f32>,
}

/// Per-sequence KDA memory, and the journal of a tentative pass.
#[derive(Clone)]
pub struct KdaState {
    carried: KdaCarried,
    journal: Option<Box<KdaJournal>>,
}

impl KdaState {
    pub fn new(cfg: &ModelConfig) -> Self {
        let (h, d, k) = (cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
        let hist = h * d * (k - 1);
        let carried = KdaCarried {
            s: vec![0.0; h * d * d],
            q_hist: vec![0.0; hist],
            k_hist: vec![0.0; hist],
            v_hist: vec![0.0; hist],
        };
        KdaState { carried, journal: None }
    }

    /// Zeroes the state and the histories (a new sequence), dropping any journal.
    pub fn clear(&mut self) {
        let c = &mut self.carried;
        for v in [&mut c.s, &mut c.q_hist, &mut c.k_hist, &mut c.v_hist] {
            v.fill(0.0);
        }
        self.journal = None;
    }

    /// Floats [`KdaState::carried`] holds for `cfg`.
    pub(crate) fn carried_floats(cfg: &ModelConfig) -> usize {
        let (h, d, k) = (cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
        h * d * d + 3 * h * d * (k - 1)
    }

    /// The carried numbers in a fixed order: the state, then the q, k and v histories.
    pub(crate) fn carried(&self) -> [&[f32]; 4] {
        let c = &self.carried;
        [&c.s, &c.q_hist, &c.k_hist, &c.v_hist]
    }

    /// The carried numbers to overwrite, in [`KdaState::carried`]'s order (any journal is
    /// dropped).
    pub(crate) fn carried_mut(&mut self) -> [&mut [f32]; 4] {
        self.journal = None;
        let c = &mut self.carried;
        [&mut c.s, &mut c.q_hist, &mut c.k_hist, &mut c.v_hist]
    }

    /// True when both carry the same numbers, bit for bit (journals aside).
    pub fn same_bits(&self, other: &KdaState) -> bool {
        let c = |x: &KdaCarried| -> Vec<u32> {
            [&x.s, &x.q_hist, &x.k_hist, &x.v_hist].iter().flat_map(|v| v.iter().map(|f| f.to_bits())).collect()
        };
        c(&self.carried) == c(&other.carried)
    }

    /// Starts journaling: the next forward calls can be partly undone by
    /// [`KdaState::keep_tentative`].
    pub fn begin_tentative(&mut self) {
        let before = self.carried.clone();
        self.journal = Some(Box::new(KdaJournal { before, raw: Vec::new(), steps: Vec::new() }));
    }

    /// Ends journaling, keeping the first `keep` journaled positions: the carried memory
    /// becomes what running only those positions would have left, bit for bit (restored
    /// from before the pass, then the kept positions replayed through the same conv
    /// history update and delta rule). Keeping every position changes nothing.
    pub fn keep_tentative(&mut self, cfg: &ModelConfig, keep: usize) {
        let Some(journal) = self.journal.take() else { return };
        let (h, d, kern) = (cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
        let p = h * d;
        let journaled = journal.raw.len() / (3 * p);
        if keep >= journaled {
            return;
        }
        let KdaJournal { before, raw, steps } = *journal;
        self.carried = before;
        let c = &mut self.carried;
        let (zeros, mut u, mut o) = (vec![0.0f32; d], vec![0.0f32; d], vec![0.0f32; d]);
        let per_step = h * (3 * d + 1);
        for t in 0..keep {
            let r = &raw[t * 3 * p..(t + 1) * 3 * p];
            push_history(&r[..p], &mut c.q_hist, kern);
            push_history(&r[p..2 * p], &mut c.k_hist, kern);
            push_history(&r[2 * p..], &mut c.v_hist, kern);
            for head in 0..h {
                let rec = &steps[t * per_step + head * (3 * d + 1)..t * per_step + (head + 1) * (3 * d + 1)];
                // The query only reads the output, which a replay throws away.
                let step =
                    KdaStep { q: &zeros, k: &rec[..d], v: &rec[d..2 * d], alpha: &rec[2 * d..3 * d], beta: rec[3 * d] };
                kda_recurrence_step(&mut c.s[head * d * d..(head + 1) * d * d], &step, &mut u, &mut o);
            }
        }
    }
}

/// Appends one token's raw inputs `x` (`[C]`) to the conv histories `hist` (`[C][K-1]`,
/// oldest first), exactly as [`short_conv_step`] does.
fn push_history(x: &[f32], hist: &mut [f32], kernel: usize) {
    let back = kernel - 1;
    for (c, &xc) in x.iter().enumerate() {
        push_one(&mut hist[c * back..(c + 1) * back], xc);
    }
}

/// Shifts one channel's history `h` (`[K-1]`, oldest first) by one and appends `xc`.
fn push_one(h: &mut [f32], xc: f32) {
    if let Some(last) = h.len().checked_sub(1) {
        h.copy_within(1.., 0);
        h[last] = xc;
    }
}

/// Causal depthwise conv + SiLU of one token's `x` (`[C]`), updating `hist` (`[C][K-1]`).
pub fn short_conv_step(x: &mut [f32], taps: &[f32], hist: &mut [f32], kernel: usize) {
    let back = kernel - 1;
    for (c, xc) in x.iter_mut().enumerate() {
        let w = &taps[c * kernel..(c + 1) * kernel];
        let h = &mut hist[c * back..(c + 1) * back];
        let mut pre = 0.0f64;
        for j in 0..back {
            pre += f64::from(w[j]) * f64::from(h[j]);
        }
        pre += f64::from(w[back]) * f64::from(*xc);
        push_one(h, *xc);
        *xc = silu(pre as f32);
    }
}

/// One token's inputs to the delta rule for one head, each `[D]`.
pub struct KdaStep<'a> {
    /// Query, already L2-normed and scaled by `D^-1/2`.
    pub q: &'a [f32],
    /// Key, L2-normed.
    pub k: &'a [f32],
    pub v: &'a [f32],
    /// Per-key-channel decay in (0, 1].
    pub alpha: &'a [f32],
    pub beta: f32,
}

/// One token of the delta rule for one head. `s` is `[D][D]` (row = key channel);
/// `u` is scratch; the head output goes to `o`.
pub fn kda_recurrence_step(s: &mut [f32], step: &KdaStep<'_>, u: &mut [f32], o: &mut [f32]) {
    let KdaStep { q, k, v, alpha, beta } = *step;
    let d = q.len();
    for (i, &a) in alpha.iter().enumerate() {
        for sij in &mut s[i * d..(i + 1) * d] {
            *sij *= a;
        }
    }
    u.fill(0.0);
    for (i, &ki) in k.iter().enumerate() {
        for (uj, &sij) in u.iter_mut().zip(&s[i * d..(i + 1) * d]) {
            *uj += ki * sij;
        }
    }
    for (i, &ki) in k.iter().enumerate() {
        let kb = ki * beta;
        for ((sij, &vj), &uj) in s[i * d..(i + 1) * d].iter_mut().zip(v).zip(u.iter()) {
            *sij += kb * (vj - uj);
        }
    }
    o.fill(0.0);
    for (i, &qi) in q.iter().enumerate() {
        for (oj, &sij) in o.iter_mut().zip(&s[i * d..(i + 1) * d]) {
            *oj += qi * sij;
        }
    }
}

impl KdaWeights {
    /// Applies this KDA layer to `n` tokens `xs` (`[n × E]`, already input-normed), in order,
    /// carrying `state`; writes `[n × E]` into `out`. Each projection is loaded when used
    /// (a piece is read then) and let go before the next; a failed or stopped piece read
    /// is the error.
    pub fn forward(
        &self,
        cfg: &ModelConfig,
        xs: &[f32],
        state: &mut KdaState,
        out: &mut [f32],
        stop: &CancelToken,
    ) -> Result<()> {
        let rows = 0..xs.len() / cfg.hidden_size;
        self.forward_batch(cfg, xs, &mut [SeqRows { memory: state, rows }], out, stop)
    }

    /// [`KdaWeights::forward`] for several sequences at once: `xs` holds each sequence's new
    /// tokens at its rows (`[rows × E]`), each carried through its own state in order. The
    /// projections run on every row at once (one read of each weight); each row's numbers
    /// are those of its sequence alone.
    pub fn forward_batch(
        &self,
        cfg: &ModelConfig,
        xs: &[f32],
        seqs: &mut [SeqRows<'_, KdaState>],
        out: &mut [f32],
        stop: &CancelToken,
    ) -> Result<()> {
        let (e, h, d) = (cfg.hidden_size, cfg.kda.n_heads, cfg.kda.head_dim);
        let p = h * d;
        let n = xs.len() / e;
        let mut q = vec![0.0f32; n * p];
        let mut k = vec![0.0f32; n * p];
        let mut v = vec![0.0f32; n * p];
        let mut gate = vec![0.0f32; n * p];
        let mut beta_raw = vec![0.0f32; n * h];
        let mut f_low = vec![0.0f32; n * d];
        let mut z = vec![0.0f32; n * p];
        self.q.load(stop)?.matmul(xs, &mut q);
        self.k.load(stop)?.matmul(xs, &mut k);
        self.v.load(stop)?.matmul(xs, &mut v);
        self.g.load(stop)?.matmul(xs, &mut gate);
        self.b.load(stop)?.matmul(xs, &mut beta_raw);
        self.f_a.load(stop)?.matmul(xs, &mut f_low);
        self.f_b.load(stop)?.matmul(&f_low, &mut z);
        let mut gated = vec![0.0f32; n * p];
        let projected = Projected { gate: &gate, beta_raw: &beta_raw, z: &z };
        for seq in seqs.iter_mut() {
            let qkv = [&mut q[seq.span(p)], &mut k[seq.span(p)], &mut v[seq.span(p)]];
            self.recur(cfg, seq.rows.clone(), qkv, &projected, seq.memory, &mut gated[seq.span(p)]);
        }
        self.o.load(stop)?.matmul(&gated, out);
        Ok(())
    }

    /// One sequence's tokens `rows` through the short convolutions and the recurrence, in
    /// order, carrying `state`: `qkv` are the rows' projections (`[len × H·d]` each,
    /// convolved in place), `projected` every row of the batch's other projections; writes
    /// the gated, normed head outputs of the rows into `gated` (`[len × H·d]`).
    fn recur(
        &self,
        cfg: &ModelConfig,
        rows: std::ops::Range<usize>,
        [q, k, v]: [&mut [f32]; 3],
        projected: &Projected<'_>,
        state: &mut KdaState,
        gated: &mut [f32],
    ) {
        let (h, d, kern) = (cfg.kda.n_heads, cfg.kda.head_dim, cfg.kda.conv_kernel);
        let p = h * d;
        let Projected { gate, beta_raw, z } = *projected;
        let q_scale = 1.0 / (d as f32).sqrt();
        let g_min = cfg.kda.gate_lower_bound;
        let (mut alpha, mut u, mut o) = (vec![0.0f32; d], vec![0.0f32; d], vec![0.0f32; d]);
        let mut normed = vec![0.0f32; d];
        let KdaState { carried: c, journal } = state;
        for (t, row) in rows.enumerate() {
            let span = t * p..(t + 1) * p;
            if let Some(j) = journal.as_mut() {
                for raw in [&*q, &*k, &*v] {
                    j.raw.extend_from_slice(&raw[span.clone()]);
                }
            }
            short_conv_step(&mut q[span.clone()], &self.q_conv, &mut c.q_hist, kern);
            short_conv_step(&mut k[span.clone()], &self.k_conv, &mut c.k_hist, kern);
            short_conv_step(&mut v[span.clone()], &self.v_conv, &mut c.v_hist, kern);
            for head in 0..h {
                let c0 = t * p + head * d;
                let hs = c0..c0 + d;
                l2norm(&mut q[hs.clone()]);
                l2norm(&mut k[hs.clone()]);
                for qv in &mut q[hs.clone()] {
                    *qv *= q_scale;
                }
                let beta = sigmoid(beta_raw[row * h + head]);
                let a_exp = self.a_log[head].exp();
                for (di, a) in alpha.iter_mut().enumerate() {
                    let c = head * d + di;
                    let gate_u = a_exp * (z[row * p + c] + self.dt_bias[c]);
                    *a = (g_min * sigmoid(gate_u)).exp();
                }
                let s = &mut c.s[head * d * d..(head + 1) * d * d];
                let step = KdaStep { q: &q[hs.clone()], k: &k[hs.clone()], v: &v[hs.clone()], alpha: &alpha, beta };
                if let Some(j) = journal.as_mut() {
                    j.steps.extend_from_slice(step.k);
                    j.steps.extend_from_slice(step.v);
                    j.steps.extend_from_slice(&alpha);
                    j.steps.push(beta);
                }
                kda_recurrence_step(s, &step, &mut u, &mut o);
                rmsnorm(&o, &self.o_norm, cfg.rms_norm_eps, &mut normed);
                for (di, &val) in normed.iter().enumerate() {
                    gated[c0 + di] = val * sigmoid(gate[row * p + head * d + di]);
                }
            }
        }
    }
}

/// A batch's projections the recurrence reads but does not change, `[rows × ·]`.
#[derive(Clone, Copy)]
struct Projected<'a> {
    gate: &'a [f32],
    beta_raw: &'a [f32],
    z: &'a [f32],
}
