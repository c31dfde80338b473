//! Every kernel equals its plain `_ref` twin bit for bit, at odd lengths, and the batched
//! product equals the single-vector one.

use k3_engine::kernels::dispatch::{
    available, dot_bf16_on, dot_bf16_rows4_on, dot_f32_on, dot_mxfp4_batch_on, dot_mxfp4_on,
};
use k3_engine::kernels::{self, reference, widen, RowDot};
use rand_like::Lcg;

/// A tiny deterministic generator so inputs are reproducible without extra crates.
mod rand_like {
    pub struct Lcg(pub u64);
    impl Lcg {
        pub fn next_u32(&mut self) -> u32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
        /// Roughly uniform in [-scale, scale).
        pub fn f32(&mut self, scale: f32) -> f32 {
            (self.next_u32() as f32 / (1u64 << 31) as f32 - 1.0) * scale
        }
        pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
            (0..n).map(|_| self.f32(scale)).collect()
        }
    }
}

const ODD_LENGTHS: [usize; 9] = [1, 7, 15, 16, 17, 33, 100, 128, 1031];

#[test]
fn dot_f32_equals_reference_twin_on_every_isa() {
    let mut rng = Lcg(1);
    for isa in available() {
        for n in ODD_LENGTHS {
            let (w, x) = (rng.vec(n, 2.0), rng.vec(n, 3.0));
            let got = dot_f32_on(isa, &w, &widen(&x));
            assert_eq!(got.to_bits(), reference::dot_f32_ref(&w, &x).to_bits(), "{isa:?} n={n}");
        }
        eprintln!("dot_f32: {isa:?} equals the reference twin");
    }
    assert_eq!(kernels::dot_f32(&[1.5, 2.0], &[2.0, 0.25]), 3.5);
}

#[test]
fn dot_bf16_equals_reference_twin_on_every_isa() {
    let mut rng = Lcg(2);
    for isa in available() {
        for n in ODD_LENGTHS {
            let w: Vec<u16> = (0..n).map(|_| (rng.next_u32() >> 16) as u16 & 0xBFFF).collect();
            let x = rng.vec(n, 3.0);
            let got = dot_bf16_on(isa, &w, &widen(&x));
            let want = reference::dot_bf16_ref(&w, &x);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{isa:?} n={n}");
        }
    }
}

#[test]
fn dot_mxfp4_equals_reference_twin_on_every_isa_including_scale_extremes() {
    let mut rng = Lcg(3);
    for isa in available() {
        for groups in [1usize, 2, 3, 7, 33, 112] {
            let n = groups * 32;
            let packed: Vec<u8> = (0..n / 2).map(|_| rng.next_u32() as u8).collect();
            let mut scales: Vec<u8> = (0..groups).map(|_| 110 + (rng.next_u32() % 30) as u8).collect();
            scales[0] = 255;
            if groups > 1 {
                scales[1] = 0;
            }
            let x = rng.vec(n, 3.0);
            let got = dot_mxfp4_on(isa, &packed, &scales, &widen(&x));
            assert_eq!(
                got.to_bits(),
                reference::dot_mxfp4_ref(&packed, &scales, &x).to_bits(),
                "{isa:?} groups={groups}"
            );
        }
    }
}

#[test]
fn norms_and_activations_equal_reference_twins() {
    let mut rng = Lcg(4);
    for n in ODD_LENGTHS {
        let (x, w) = (rng.vec(n, 5.0), rng.vec(n, 2.0));
        let mut out = vec![0.0f32; n];
        kernels::rmsnorm(&x, &w, 1e-5, &mut out);
        assert_eq!(out, reference::rmsnorm_ref(&x, &w, 1e-5), "rmsnorm n={n}");
        let mut y = x.clone();
        kernels::l2norm(&mut y);
        assert_eq!(y, reference::l2norm_ref(&x), "l2norm n={n}");
        let (g, u) = (rng.vec(n, 60.0), rng.vec(n, 200.0));
        kernels::situ_glu(&g, &u, 4.0, 25.0, &mut out);
        let want: Vec<f32> = g.iter().zip(&u).map(|(&a, &b)| reference::situ_glu_ref(a, b, 4.0, 25.0)).collect();
        assert_eq!(out, want, "situ_glu n={n}");
    }
}

/// A dense f32 matrix for driving the row-parallel products.
struct Dense {
    rows: usize,
    cols: usize,
    w: Vec<f32>,
}

impl RowDot for Dense {
    fn rows(&self) -> usize {
        self.rows
    }
    fn cols(&self) -> usize {
        self.cols
    }
    fn row_dot(&self, r: usize, x: &[f64]) -> f32 {
        kernels::dot_f32_wide(&self.w[r * self.cols..(r + 1) * self.cols], x)
    }
}

#[test]
fn batched_product_equals_token_by_token_bit_for_bit() {
    let mut rng = Lcg(5);
    // Large enough to take the parallel path.
    let m = Dense { rows: 300, cols: 257, w: rng.vec(300 * 257, 1.0) };
    let n_tokens = 5;
    let xs = rng.vec(n_tokens * m.cols, 2.0);
    let mut batched = vec![0.0f32; n_tokens * m.rows];
    kernels::matmul_rows(&m, &xs, &mut batched);
    for t in 0..n_tokens {
        let mut single = vec![0.0f32; m.rows];
        kernels::matvec_rows(&m, &xs[t * m.cols..(t + 1) * m.cols], &mut single);
        assert_eq!(&batched[t * m.rows..(t + 1) * m.rows], &single[..], "token {t}");
    }
}

#[test]
fn batched_mxfp4_equals_one_token_at_a_time_on_every_isa() {
    let mut rng = Lcg(6);
    for isa in available() {
        for (groups, n_tokens) in [(1usize, 1usize), (3, 5), (112, 64), (7, 70)] {
            let cols = groups * 32;
            let packed: Vec<u8> = (0..cols / 2).map(|_| rng.next_u32() as u8).collect();
            let mut scales: Vec<u8> = (0..groups).map(|_| 115 + (rng.next_u32() % 12) as u8).collect();
            scales[0] = 255;
            let xs = widen(&rng.vec(cols * n_tokens, 2.0));
            let mut out = vec![0.0f32; n_tokens];
            dot_mxfp4_batch_on(isa, &packed, &scales, &xs, &mut out);
            for (t, &got) in out.iter().enumerate() {
                let want = dot_mxfp4_on(isa, &packed, &scales, &xs[t * cols..(t + 1) * cols]);
                assert_eq!(got.to_bits(), want.to_bits(), "{isa:?} {groups} groups, token {t} of {n_tokens}");
            }
        }
    }
}

#[test]
fn four_bf16_rows_at_once_equal_one_row_at_a_time_on_every_isa() {
    let mut rng = Lcg(7);
    for isa in available() {
        for n in ODD_LENGTHS {
            let rows: Vec<Vec<u16>> =
                (0..4).map(|_| (0..n).map(|_| (rng.next_u32() >> 16) as u16 & 0xBFFF).collect()).collect();
            let x = widen(&rng.vec(n, 3.0));
            let got = dot_bf16_rows4_on(isa, [&rows[0], &rows[1], &rows[2], &rows[3]], &x);
            for (r, row) in rows.iter().enumerate() {
                let want = dot_bf16_on(isa, row, &x);
                assert!(
                    got[r].to_bits() == want.to_bits() || (got[r].is_nan() && want.is_nan()),
                    "{isa:?} n={n} row {r}"
                );
            }
        }
    }
}
