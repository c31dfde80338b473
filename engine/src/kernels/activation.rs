//! Elementwise activations: sigmoid, SiLU and SiTU-GLU, all in f32.
//!
//! Owns: the exact formulas of spec §3.
//! Must not: feed the capped gate to the sigmoid in SiTU-GLU (the sigmoid sees raw `g`).

/// `1 / (1 + e^-z)` in f32.
#[inline]
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// `z · σ(z)`.
#[inline]
pub fn silu(z: f32) -> f32 {
    z * sigmoid(z)
}

/// SiTU-GLU over (gate, up) pairs: `out_i = β1·tanh(g_i/β1)·σ(g_i) · β2·tanh(u_i/β2)`.
pub fn situ_glu(gate: &[f32], up: &[f32], beta_gate: f32, beta_up: f32, out: &mut [f32]) {
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        let a = beta_gate * (g / beta_gate).tanh() * sigmoid(g);
        let b = beta_up * (u / beta_up).tanh();
        *o = a * b;
    }
}
