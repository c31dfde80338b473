//! The gated MLP `down · SiTU-GLU(gate·x, up·x)` (spec §3, §4.5): the dense FFN of the
//! first layers, the fused shared experts and, in latent space, every routed expert.
//!
//! Owns: [`GluMlp`] (three matrices and their batched product) and the binding of the
//! dense FFN.
//! Must not: know about routing or expert storage: `moe.rs` and `experts.rs` both build on
//! this leaf, so it imports neither (that would bring back the `experts` ↔ `moe` circle).
//! Easy to break: the gate half comes from `gate_proj`/`w1` and the up half from
//! `up_proj`/`w3`; swapping them changes SiTU-GLU (the sigmoid sees the uncapped gate).

use crate::config::ModelConfig;
use crate::error::Result;
use crate::events::CancelToken;
use crate::kernels::situ_glu;
use crate::model::bind::Binder;
use crate::model::names;
use crate::model::weight::Weight;

/// A gated MLP `down · SiTU-GLU(gate·x, up·x)`: the dense FFN, the fused shared experts
/// and (in latent space) each routed expert.
pub struct GluMlp {
    /// `[I, in]`.
    pub gate: Weight,
    /// `[I, in]`.
    pub up: Weight,
    /// `[in, I]`.
    pub down: Weight,
}

impl GluMlp {
    /// Applies the MLP to `n` tokens `xs` (`[n][in]`) → `out` (`[n][in]`), loading each
    /// matrix when used (a piece read, stopped by `stop`, is the only way this fails).
    pub fn forward(&self, cfg: &ModelConfig, xs: &[f32], out: &mut [f32], stop: &CancelToken) -> Result<()> {
        let inter = self.gate.rows();
        let n = xs.len() / self.gate.cols();
        let mut g = vec![0.0f32; n * inter];
        let mut u = vec![0.0f32; n * inter];
        self.gate.load(stop)?.matmul(xs, &mut g);
        self.up.load(stop)?.matmul(xs, &mut u);
        let mut a = vec![0.0f32; n * inter];
        situ_glu(&g, &u, cfg.situ_beta_gate, cfg.situ_beta_up, &mut a);
        self.down.load(stop)?.matmul(&a, out);
        Ok(())
    }

    /// Dense FFN of layer `layer_idx`.
    pub fn bind_dense(b: &Binder, cfg: &ModelConfig, layer_idx: usize) -> Result<Self> {
        let (e, i) = (cfg.hidden_size, cfg.dense_intermediate);
        let n = |s: &str| names::layer(layer_idx, s);
        Ok(GluMlp {
            gate: b.weight(&n(names::DENSE_GATE), i, e)?,
            up: b.weight(&n(names::DENSE_UP), i, e)?,
            down: b.weight(&n(names::DENSE_DOWN), e, i)?,
        })
    }
}
