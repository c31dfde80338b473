//! Plain reference twins of the kernels: the FP contract written as directly as possible.
//!
//! Owns: `*_ref` functions that decode one element at a time and spell out lanes and the
//! reduction tree with explicit indices. Tests require the optimised kernels to equal
//! these bit for bit, and these to be within the manifest tolerance of the float64
//! reference fixtures.
//! Must not: be optimised or shared with the kernels they check.
//! Easy to break: keep them independent; a helper shared with `dot.rs` would make the
//! twin test vacuous.

/// E2M1 value of a 4-bit code, computed from its bits rather than a table.
pub fn e2m1_ref(code: u8) -> f32 {
    let magnitude = match code & 7 {
        0 => 0.0,
        1 => 0.5,
        m @ 2..=3 => 1.0 + 0.5 * (m - 2) as f32,
        m @ 4..=5 => 2.0 + (m - 4) as f32,
        m => 4.0 + 2.0 * (m - 6) as f32,
    };
    if code & 8 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// Element `i` of a packed MXFP4 row, dequantised (`None` for a scale byte of 255).
pub fn mxfp4_element_ref(packed: &[u8], scales: &[u8], i: usize) -> f64 {
    let byte = packed[i / 2];
    let code = if i.is_multiple_of(2) { byte & 0x0f } else { byte >> 4 };
    let scale = scales[i / 32];
    if scale == 255 {
        return 0.0;
    }
    e2m1_ref(code) as f64 * 2f64.powi(scale as i32 - 127)
}

fn tree16_ref(a: [f64; 16]) -> f64 {
    let b: Vec<f64> = (0..4).map(|l| (a[l] + a[l + 4]) + (a[l + 8] + a[l + 12])).collect();
    (b[0] + b[1]) + (b[2] + b[3])
}

/// Dense dot product, elements already widened to f64.
pub fn dot_dense_ref(w: &[f64], x: &[f32]) -> f32 {
    let full = w.len() / 16 * 16;
    let mut lanes = [0.0f64; 16];
    for i in 0..full {
        lanes[i % 16] += w[i] * x[i] as f64;
    }
    let mut total = tree16_ref(lanes);
    for i in full..w.len() {
        total += w[i] * x[i] as f64;
    }
    total as f32
}

/// `dot_f32` twin.
pub fn dot_f32_ref(w: &[f32], x: &[f32]) -> f32 {
    let wide: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    dot_dense_ref(&wide, x)
}

/// `dot_bf16` twin.
pub fn dot_bf16_ref(w: &[u16], x: &[f32]) -> f32 {
    let wide: Vec<f64> = w.iter().map(|&b| bf16_to_f32_ref(b) as f64).collect();
    dot_dense_ref(&wide, x)
}

/// BF16 bits to f32: the 16 bits become the high half of the f32.
pub fn bf16_to_f32_ref(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// `dot_mxfp4` twin: per group 8 lanes of unscaled E2M1·x, tree, times the scale.
pub fn dot_mxfp4_ref(packed: &[u8], scales: &[u8], x: &[f32]) -> f32 {
    let mut total = 0.0f64;
    for (g, &scale) in scales.iter().enumerate() {
        if scale == 255 {
            continue;
        }
        let mut lanes = [0.0f64; 8];
        for t in 0..32 {
            let i = 32 * g + t;
            let byte = packed[i / 2];
            let code = if i.is_multiple_of(2) { byte & 0x0f } else { byte >> 4 };
            lanes[t % 8] += e2m1_ref(code) as f64 * x[i] as f64;
        }
        let b = [lanes[0] + lanes[4], lanes[1] + lanes[5], lanes[2] + lanes[6], lanes[3] + lanes[7]];
        total += ((b[0] + b[1]) + (b[2] + b[3])) * 2f64.powi(scale as i32 - 127);
    }
    total as f32
}

/// `dot_bf16_rows4` twin: each of the four rows on its own.
pub fn dot_bf16_rows4_ref(w: [&[u16]; 4], x: &[f32]) -> [f32; 4] {
    w.map(|row| dot_bf16_ref(row, x))
}

/// `dot_mxfp4_batch` twin (and, after a row's last group, `mxfp4_accumulate_tokens`'s):
/// one result per token of `xs` (`[n][cols]`, `cols = 2 · packed.len()`).
pub fn dot_mxfp4_batch_ref(packed: &[u8], scales: &[u8], xs: &[f32]) -> Vec<f32> {
    xs.chunks_exact(packed.len() * 2).map(|x| dot_mxfp4_ref(packed, scales, x)).collect()
}

/// `dot_bf16_tokens` twin (and, after a row's tail, `bf16_accumulate_tokens`'s): one
/// result per token of `xs` (`[n][w.len()]`).
pub fn dot_bf16_tokens_ref(w: &[u16], xs: &[f32]) -> Vec<f32> {
    xs.chunks_exact(w.len().max(1)).map(|x| dot_bf16_ref(w, x)).collect()
}

/// RMSNorm twin: `w_i · (x_i · r)`, `r = 1/sqrt(mean(x²) + eps)` in f64 then f32.
pub fn rmsnorm_ref(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let mut ss = 0.0f64;
    for &v in x {
        ss += v as f64 * v as f64;
    }
    let r = (1.0 / (ss / x.len() as f64 + eps as f64).sqrt()) as f32;
    x.iter().zip(w).map(|(&v, &g)| g * (v * r)).collect()
}

/// L2Norm twin: `x / sqrt(Σx² + 1e-6)`.
pub fn l2norm_ref(x: &[f32]) -> Vec<f32> {
    let mut ss = 0.0f64;
    for &v in x {
        ss += v as f64 * v as f64;
    }
    let r = (1.0 / (ss + 1e-6).sqrt()) as f32;
    x.iter().map(|&v| v * r).collect()
}

/// SiTU-GLU twin: `β1·tanh(g/β1)·σ(g) · β2·tanh(u/β2)`.
pub fn situ_glu_ref(g: f32, u: f32, beta1: f32, beta2: f32) -> f32 {
    let sig = 1.0 / (1.0 + (-g).exp());
    let a = beta1 * (g / beta1).tanh() * sig;
    let b = beta2 * (u / beta2).tanh();
    a * b
}

/// `dot_f32_queries` twin: `out[q][r]` (row-major, `n_rows` per query) is
/// [`dot_f32_ref`] of row `r` and query `q`.
pub fn dot_f32_queries_ref(rows: &[f32], width: usize, queries: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    for q in 0..queries.len() / width {
        for r in 0..rows.len() / width {
            out.push(dot_f32_ref(&rows[r * width..(r + 1) * width], &queries[q * width..(q + 1) * width]));
        }
    }
    out
}

/// `accumulate_weighted_rows_f32` twin: element by element, row by row in order,
/// `a = a + (p · v)` in f32.
pub fn accumulate_weighted_rows_f32_ref(
    weights: &[f32],
    w_stride: usize,
    rows: &[f32],
    row_stride: usize,
    acc: &[f32],
    width: usize,
) -> Vec<f32> {
    let mut out = acc.to_vec();
    let n_rows = rows.len() / row_stride;
    for q in 0..acc.len() / width {
        for j in 0..width {
            let mut a = acc[q * width + j];
            for r in 0..n_rows {
                let product = weights[q * w_stride + r] * rows[r * row_stride + j];
                a += product;
            }
            out[q * width + j] = a;
        }
    }
    out
}

/// The transposed product's twin: `out[j] = Σ_i w[i][j]·x[i]` over the rows of `w`
/// (`[x.len()][cols]`, as f64 values), summed in row order in f64 and rounded once.
pub fn transposed_matvec_ref(w: &[f64], cols: usize, x: &[f32]) -> Vec<f32> {
    (0..cols)
        .map(|j| {
            let mut total = 0.0f64;
            for (i, &xi) in x.iter().enumerate() {
                total += w[i * cols + j] * xi as f64;
            }
            total as f32
        })
        .collect()
}
