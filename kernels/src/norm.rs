//! RMSNorm and L2Norm under the FP contract.
//!
//! Owns: sequential f64 sums of squares and the f32 products that follow.
//! Must not: use a mean for L2Norm (it is a sum) or put epsilon outside the square root.
//! Easy to break: the weight multiplies AFTER normalisation: `w · (x · r)`.

/// `1 / sqrt(Σx²/n + eps)` computed in f64, rounded to f32.
pub fn rms_inverse(x: &[f32], eps: f32) -> f32 {
    let mut ss = 0.0f64;
    for &v in x {
        ss += f64::from(v) * f64::from(v);
    }
    (1.0 / (ss / x.len() as f64 + f64::from(eps)).sqrt()) as f32
}

/// RMSNorm: `out_i = w_i · (x_i · r)`.
pub fn rmsnorm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let r = rms_inverse(x, eps);
    for ((o, &v), &g) in out.iter_mut().zip(x).zip(w) {
        *o = g * (v * r);
    }
}

/// L2Norm in place: `x / sqrt(Σx² + 1e-6)` (KDA q and k, per head).
pub fn l2norm(x: &mut [f32]) {
    let mut ss = 0.0f64;
    for &v in x.iter() {
        ss += f64::from(v) * f64::from(v);
    }
    let r = (1.0 / (ss + 1e-6).sqrt()) as f32;
    for v in x.iter_mut() {
        *v *= r;
    }
}
