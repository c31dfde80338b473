//! Every kernel equals its plain `_ref` twin bit for bit, on every body this CPU runs
//! (`available()`: portable, and AVX2 / AVX-512 or NEON where present, each a `DetectedIsa` whose
//! methods run that body), at odd lengths, and the batched product equals the
//! single-vector one. A `DetectedIsa` exists only for a level this CPU has.

use k3_kernels as kernels;
use k3_kernels::dispatch::{available, best, current, read_sum, select, DetectedIsa, Isa};
use k3_kernels::{reference, widen, RowDot};
use rand_like::Lcg;

mod batched;

/// Held while a test switches kernel bodies with `select` (one process-wide choice), so each
/// test knows which body it measured.
pub(crate) static KERNEL_BODY: std::sync::Mutex<()> = std::sync::Mutex::new(());

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

/// Dot-product lengths: every tail `len % 16` and partial 4-lane register over the first
/// three blocks, then multi-block rows, K3's hidden size and a ragged tail after it.
pub(crate) fn dot_lengths() -> impl Iterator<Item = usize> {
    (0..=49).chain([63, 64, 65, 100, 128, 1031, 7168, 7173])
}

/// Random BF16 bits of magnitude below 2 (no infinities or NaNs).
pub(crate) fn bf16_bits(rng: &mut Lcg, n: usize) -> Vec<u16> {
    (0..n).map(|_| (rng.next_u32() >> 16) as u16 & 0xBFFF).collect()
}

pub(crate) fn same_or_both_nan(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn dot_f32_equals_reference_twin_on_every_isa() {
    let mut rng = Lcg(1);
    for body in available() {
        for n in dot_lengths() {
            let (w, x) = (rng.vec(n, 2.0), rng.vec(n, 3.0));
            let got = body.dot_f32(&w, &widen(&x));
            assert_eq!(got.to_bits(), reference::dot_f32_ref(&w, &x).to_bits(), "{body} n={n}");
        }
        eprintln!("dot_f32: {body} equals the reference twin");
    }
    assert_eq!(kernels::dot_f32(&[1.5, 2.0], &widen(&[2.0, 0.25])), 3.5);
}

#[test]
fn dot_bf16_equals_reference_twin_on_every_isa() {
    let mut rng = Lcg(2);
    for body in available() {
        for n in dot_lengths() {
            let w = bf16_bits(&mut rng, n);
            let x = rng.vec(n, 3.0);
            let got = body.dot_bf16(&w, &widen(&x));
            let want = reference::dot_bf16_ref(&w, &x);
            assert!(same_or_both_nan(got, want), "{body} n={n}");
        }
        eprintln!("dot_bf16: {body} equals the reference twin");
    }
}

#[test]
fn dot_mxfp4_equals_reference_twin_on_every_isa_including_scale_extremes() {
    let mut rng = Lcg(3);
    for body in available() {
        for groups in [1usize, 2, 3, 7, 33, 112] {
            let n = groups * 32;
            let packed: Vec<u8> = (0..n / 2).map(|_| rng.next_u32() as u8).collect();
            let mut scales: Vec<u8> = (0..groups).map(|_| 110 + (rng.next_u32() % 30) as u8).collect();
            scales[0] = 255;
            if groups > 1 {
                scales[1] = 0;
            }
            let x = rng.vec(n, 3.0);
            let got = body.dot_mxfp4(&packed, &scales, &widen(&x));
            assert_eq!(
                got.to_bits(),
                reference::dot_mxfp4_ref(&packed, &scales, &x).to_bits(),
                "{body} groups={groups}"
            );
        }
        eprintln!("dot_mxfp4: {body} equals the reference twin");
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

#[test]
fn situ_glu_split_over_threads_equals_its_reference_twin() {
    // Past the length from which the activation is spread over the threads, at an odd length
    // (a short last task), on four threads.
    let n = 100_003;
    let mut rng = Lcg(5);
    let (g, u) = (rng.vec(n, 60.0), rng.vec(n, 200.0));
    let mut out = vec![0.0f32; n];
    let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    pool.install(|| kernels::situ_glu(&g, &u, 4.0, 25.0, &mut out));
    let want: Vec<f32> = g.iter().zip(&u).map(|(&a, &b)| reference::situ_glu_ref(a, b, 4.0, 25.0)).collect();
    assert_eq!(out, want, "situ_glu n={n}");
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
        kernels::dot_f32(&self.w[r * self.cols..(r + 1) * self.cols], x)
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
    for body in available() {
        for (groups, n_tokens) in [(1usize, 1usize), (3, 5), (112, 64), (7, 70)] {
            let cols = groups * 32;
            let packed: Vec<u8> = (0..cols / 2).map(|_| rng.next_u32() as u8).collect();
            let mut scales: Vec<u8> = (0..groups).map(|_| 115 + (rng.next_u32() % 12) as u8).collect();
            scales[0] = 255;
            let xs = widen(&rng.vec(cols * n_tokens, 2.0));
            let mut out = vec![0.0f32; n_tokens];
            body.dot_mxfp4_batch(&packed, &scales, &xs, &mut out);
            for (t, &got) in out.iter().enumerate() {
                let want = body.dot_mxfp4(&packed, &scales, &xs[t * cols..(t + 1) * cols]);
                assert_eq!(got.to_bits(), want.to_bits(), "{body} {groups} groups, token {t} of {n_tokens}");
            }
        }
    }
}

#[test]
fn a_row_summed_in_group_ranges_with_strided_tokens_equals_the_whole_row_on_every_isa() {
    let mut rng = Lcg(12);
    let (groups, n_tokens) = (29usize, 19usize);
    let cols = groups * 32;
    let packed: Vec<u8> = (0..cols / 2).map(|_| rng.next_u32() as u8).collect();
    let mut scales: Vec<u8> = (0..groups).map(|_| 112 + (rng.next_u32() % 20) as u8).collect();
    scales[3] = 255;
    scales[17] = 255;
    let xs32 = rng.vec(cols * n_tokens, 3.0);
    let xs = widen(&xs32);
    for body in available() {
        // Ranges 0..5, 5..17, 17..29 in order, tokens at stride `cols` (the tiled layout).
        let mut totals = vec![0.0f64; n_tokens];
        for (g0, g1) in [(0usize, 5usize), (5, 17), (17, 29)] {
            let (p, s) = (&packed[16 * g0..16 * g1], &scales[g0..g1]);
            body.mxfp4_accumulate_tokens(p, s, &xs[32 * g0..], cols, &mut totals);
        }
        for (t, &total) in totals.iter().enumerate() {
            let want = reference::dot_mxfp4_ref(&packed, &scales, &xs32[t * cols..(t + 1) * cols]);
            assert_eq!((total as f32).to_bits(), want.to_bits(), "{body} token {t}");
        }
    }
}

#[test]
fn the_cache_blocked_mxfp4_product_equals_the_reference_per_row_and_token() {
    // 13 groups (one block of 12 and a leftover), 11 tokens (a tile of 8 and 3; two of 4 and
    // 3 on the AVX-512 body), 6 rows and 7 (pairs of rows, and one left over).
    for rows in [6usize, 7] {
        cache_blocked_mxfp4_product_case(rows);
    }
}

fn cache_blocked_mxfp4_product_case(rows: usize) {
    let mut rng = Lcg(13);
    let (groups, n_tokens) = (13usize, 11usize);
    let cols = groups * 32;
    let packed: Vec<u8> = (0..rows * cols / 2).map(|_| rng.next_u32() as u8).collect();
    let mut scales: Vec<u8> = (0..rows * groups).map(|_| 110 + (rng.next_u32() % 24) as u8).collect();
    // A missing scale (255) in the first row of a pair, in the second, in both at once.
    for (row, group) in [(1, 12), (2, 3), (3, 5), (4, 7), (5, 7)] {
        scales[row * groups + group] = 255;
    }
    let mut xs32 = rng.vec(cols * n_tokens, 2.0);
    plant_cancelling_pairs(&mut rng, &mut xs32, 9, |_| {});
    let xs = widen(&xs32);
    let _body = KERNEL_BODY.lock().unwrap_or_else(|e| e.into_inner());
    for body in available() {
        select(body);
        let mut out = vec![0.0f32; rows * n_tokens];
        kernels::mxfp4_batch::mxfp4_rows_batch(&packed, &scales, cols, &xs, &mut out);
        for r in 0..rows {
            let (p, s) = (&packed[r * cols / 2..(r + 1) * cols / 2], &scales[r * groups..(r + 1) * groups]);
            for t in 0..n_tokens {
                let want = reference::dot_mxfp4_ref(p, s, &xs32[t * cols..(t + 1) * cols]);
                assert_eq!(out[r * n_tokens + t].to_bits(), want.to_bits(), "{body} row {r} token {t}");
            }
        }
    }
    select(best());
}

#[test]
fn four_bf16_rows_at_once_equal_one_row_at_a_time_on_every_isa() {
    let mut rng = Lcg(7);
    for body in available() {
        for n in dot_lengths() {
            let rows: Vec<Vec<u16>> = (0..4).map(|_| bf16_bits(&mut rng, n)).collect();
            let x32 = rng.vec(n, 3.0);
            let x = widen(&x32);
            let four = [&rows[0][..], &rows[1][..], &rows[2][..], &rows[3][..]];
            let got = body.dot_bf16_rows4(four, &x);
            let twin = reference::dot_bf16_rows4_ref(four, &x32);
            for (r, row) in rows.iter().enumerate() {
                let want = body.dot_bf16(row, &x);
                assert!(same_or_both_nan(got[r], want), "{body} n={n} row {r}");
                assert!(same_or_both_nan(got[r], twin[r]), "{body} n={n} row {r} vs ref");
            }
        }
    }
}

#[test]
fn available_lists_every_body_this_cpu_runs_and_best_is_the_fastest() {
    let isas: Vec<Isa> = available().iter().map(|body| body.isa()).collect();
    assert_eq!(isas[0], Isa::Portable);
    #[cfg(target_arch = "x86_64")]
    {
        let has = |f: bool, isa: Isa| assert_eq!(isas.contains(&isa), f, "{isa:?}");
        has(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"), Isa::Avx2);
        has(
            std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw"),
            Isa::Avx512,
        );
        assert!(!isas.contains(&Isa::Neon), "{isas:?}");
    }
    #[cfg(target_arch = "aarch64")]
    {
        let want: &[Isa] = if std::arch::is_aarch64_feature_detected!("neon") {
            &[Isa::Portable, Isa::Neon]
        } else {
            &[Isa::Portable]
        };
        assert_eq!(isas, want);
    }
    // Ordered slowest first, so the last is the preferred one (AVX-512 over AVX2).
    let order: Vec<usize> = isas.iter().map(|i| Isa::ALL.iter().position(|a| a == i).unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{isas:?}");
    assert_eq!(best().isa(), *isas.last().unwrap());
    for isa in Isa::ALL {
        assert_eq!(isa.name().parse::<Isa>(), Ok(isa));
    }
    assert!("sse2".parse::<Isa>().is_err());
    eprintln!("kernel bodies on this CPU: {isas:?}, best {}", best());
}

#[test]
fn dense_kernels_equal_their_twins_on_every_finite_bf16_and_on_special_values() {
    let mut rng = Lcg(8);
    // Every finite BF16 (zeros, subnormals, the extremes), in rows of an awkward length.
    let all: Vec<u16> = (0..=u16::MAX).filter(|b| (b >> 7) & 0xFF != 0xFF).collect();
    for body in available() {
        for row in all.chunks(777) {
            let x = rng.vec(row.len(), 1.5);
            let got = body.dot_bf16(row, &widen(&x));
            assert!(same_or_both_nan(got, reference::dot_bf16_ref(row, &x)), "{body} row from {:#06x}", row[0]);
        }
        // Infinities, NaN, signed zeros, f32 subnormals and extremes on both sides.
        let specials = [
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE / 8.0,
            f32::from_bits(1),
            f32::MAX,
            -f32::MAX,
            1.0e30,
            -3.0e-39,
        ];
        for n in [17usize, 40, 129] {
            let mut w = rng.vec(n, 2.0);
            let mut x = rng.vec(n, 2.0);
            for (i, &v) in specials.iter().enumerate() {
                w[(5 * i) % n] = v;
                x[(7 * i + 3) % n] = v;
            }
            let got = body.dot_f32(&w, &widen(&x));
            assert!(same_or_both_nan(got, reference::dot_f32_ref(&w, &x)), "{body} n={n}");
            for (pos, bad) in [(2usize, f32::INFINITY), (n - 1, f32::NAN), (n / 2, f32::NEG_INFINITY)] {
                let mut w2 = w.clone();
                w2[pos] = bad;
                let got = body.dot_f32(&w2, &widen(&x));
                assert!(same_or_both_nan(got, reference::dot_f32_ref(&w2, &x)), "{body} n={n} {bad} at {pos}");
                let bits: Vec<u16> = w2.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
                let got = body.dot_bf16(&bits, &widen(&x));
                assert!(same_or_both_nan(got, reference::dot_bf16_ref(&bits, &x)), "{body} bf16 n={n} {bad}");
            }
        }
    }
}

#[test]
fn mxfp4_kernels_equal_their_twin_for_every_byte_and_every_scale_byte() {
    let mut rng = Lcg(9);
    // 256 groups: scale byte g for group g (0, the extremes and 255 = no contribution), and
    // every packed byte value in every byte position of a group.
    let groups = 256usize;
    let cols = groups * 32;
    let packed: Vec<u8> = (0..cols / 2).map(|i| (i * 17 + i / 256) as u8).collect();
    let scales: Vec<u8> = (0..groups).map(|g| g as u8).collect();
    // 11 tokens: the batched bodies' eight-token path and their one-token tail.
    let n_tokens = 11;
    let xs32 = rng.vec(cols * n_tokens, 4.0);
    let xs = widen(&xs32);
    for body in available() {
        let mut batched = vec![0.0f32; n_tokens];
        body.dot_mxfp4_batch(&packed, &scales, &xs, &mut batched);
        let twin: Vec<u32> =
            reference::dot_mxfp4_batch_ref(&packed, &scales, &xs32).iter().map(|v| v.to_bits()).collect();
        assert_eq!(batched.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), twin, "{body} batched");
        for t in 0..n_tokens {
            let x = &xs32[t * cols..(t + 1) * cols];
            let want = reference::dot_mxfp4_ref(&packed, &scales, x).to_bits();
            assert_eq!(body.dot_mxfp4(&packed, &scales, &widen(x)).to_bits(), want, "{body} token {t}");
            assert_eq!(batched[t].to_bits(), want, "{body} batched token {t}");
        }
        // One group at a time isolates each scale byte and each code.
        for g in [0usize, 1, 126, 127, 128, 200, 254, 255] {
            let (p, s, x) = (&packed[16 * g..16 * g + 16], &scales[g..g + 1], &xs32[32 * g..32 * g + 32]);
            let want = reference::dot_mxfp4_ref(p, s, x).to_bits();
            assert_eq!(body.dot_mxfp4(p, s, &widen(x)).to_bits(), want, "{body} group {g}");
        }
    }
}

#[test]
fn selecting_a_body_routes_the_dispatched_entry_points_without_changing_results() {
    let mut rng = Lcg(10);
    let n = 1031;
    let (w, x) = (bf16_bits(&mut rng, n), rng.vec(n, 3.0));
    let packed: Vec<u8> = (0..n / 2 / 16 * 16).map(|_| rng.next_u32() as u8).collect();
    let scales: Vec<u8> = (0..packed.len() / 16).map(|_| 115 + (rng.next_u32() % 12) as u8).collect();
    let xq = &x[..packed.len() * 2];
    let _body = KERNEL_BODY.lock().unwrap_or_else(|e| e.into_inner());
    for body in available() {
        select(body);
        assert_eq!(current(), body);
        // The dispatched entry points (what `Matrix` calls) now run `body`; the bits do not
        // move, and they are the selected body's own.
        let got = kernels::dot_bf16(&w, &widen(&x));
        assert!(same_or_both_nan(got, reference::dot_bf16_ref(&w, &x)), "{body}");
        assert!(same_or_both_nan(got, body.dot_bf16(&w, &widen(&x))), "{body}");
        let want = reference::dot_mxfp4_ref(&packed, &scales, xq);
        assert_eq!(kernels::dot_mxfp4(&packed, &scales, &widen(xq)).to_bits(), want.to_bits(), "{body}");
    }
    select(best());
    assert_eq!(current(), best());
}

#[test]
fn a_detected_isa_exists_only_for_a_level_this_cpu_runs() {
    // `DetectedIsa`'s field is private, so outside `dispatch` detection is the only way to
    // make one (a struct literal is a compile error: the `compile_fail` doc test on
    // `DetectedIsa`); here detection itself must refuse every level the CPU lacks.
    let runs: Vec<Isa> = available().iter().map(|body| body.isa()).collect();
    assert_eq!(DetectedIsa::detect(Isa::Portable).ok(), Some(DetectedIsa::portable()));
    for isa in Isa::ALL {
        match DetectedIsa::detect(isa) {
            Ok(body) => {
                assert_eq!(body.isa(), isa);
                assert!(available().contains(&body), "{isa} detected but not available");
            }
            Err(e) => {
                assert!(!runs.contains(&isa), "{isa} is available but detection refused it: {e}");
                let message = e.to_string();
                assert!(message.contains(isa.name()), "the error names the refused level: {message}");
                for has in &runs {
                    assert!(message.contains(has.name()), "the error names what the CPU runs ({has}): {message}");
                }
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let detected = |isa: Isa| DetectedIsa::detect(isa).is_ok();
        assert_eq!(detected(Isa::Avx2), has!("avx2") && has!("fma"));
        // Both AVX-512 features, not only F: the MXFP4 bodies enable BW too.
        assert_eq!(detected(Isa::Avx512), has!("avx512f") && has!("avx512bw"));
        assert!(!detected(Isa::Neon));
    }
    #[cfg(target_arch = "aarch64")]
    {
        let detected = |isa: Isa| DetectedIsa::detect(isa).is_ok();
        assert_eq!(detected(Isa::Neon), std::arch::is_aarch64_feature_detected!("neon"));
        assert!(!detected(Isa::Avx2) && !detected(Isa::Avx512));
    }
}

#[test]
fn selecting_each_available_body_makes_it_current_and_matrix_products_follow() {
    let mut rng = Lcg(14);
    let m = Dense { rows: 9, cols: 37, w: rng.vec(9 * 37, 1.0) };
    let x = rng.vec(m.cols, 2.0);
    let want: Vec<u32> = m.w.chunks(m.cols).map(|row| reference::dot_f32_ref(row, &x).to_bits()).collect();
    let _body = KERNEL_BODY.lock().unwrap_or_else(|e| e.into_inner());
    for body in available() {
        select(body);
        assert_eq!(current(), body, "select({body}) makes it current");
        let mut y = vec![0.0f32; m.rows];
        kernels::matvec_rows(&m, &x, &mut y);
        assert_eq!(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "{body}");
    }
    select(best());
    assert_eq!(current(), best());
}

#[test]
fn read_probe_sums_exactly_representable_data() {
    for n in [0usize, 1, 63, 64, 65, 1000, 4099] {
        let data: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
        let want: f32 = (0..n).map(|i| (i % 7) as f32 * 0.5).sum();
        assert_eq!(read_sum(&data), want, "n={n}");
    }
}

/// Puts `pairs` cancelling products `±2^40` into `x` (with unit weights at the same
/// positions set by `unit`): the result stays O(1) while partial sums carry 2^40, so every
/// small product rounds differently in another lane order or reduction tree, and the
/// difference survives the final rounding to f32. Random data alone hides the order.
pub(crate) fn plant_cancelling_pairs(rng: &mut Lcg, x: &mut [f32], pairs: usize, mut unit: impl FnMut(usize)) {
    let n = x.len();
    if n < 2 {
        return;
    }
    for _ in 0..pairs {
        let i = rng.next_u32() as usize % n;
        let j = (i + 1 + rng.next_u32() as usize % (n - 1)) % n;
        x[i] = 2f32.powi(40);
        x[j] = -(2f32.powi(40));
        unit(i);
        unit(j);
    }
}

#[test]
fn kernels_keep_the_contract_order_where_it_shows_in_f32() {
    let mut rng = Lcg(11);
    for body in available() {
        for n in dot_lengths() {
            let mut w = rng.vec(n, 2.0);
            let mut x = rng.vec(n, 3.0);
            plant_cancelling_pairs(&mut rng, &mut x, 1 + n / 64, |i| w[i] = 1.0);
            let got = body.dot_f32(&w, &widen(&x));
            assert_eq!(got.to_bits(), reference::dot_f32_ref(&w, &x).to_bits(), "{body} f32 n={n}");
            let bits: Vec<u16> = w.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
            let got = body.dot_bf16(&bits, &widen(&x));
            assert_eq!(got.to_bits(), reference::dot_bf16_ref(&bits, &x).to_bits(), "{body} bf16 n={n}");
            if n >= 4 {
                let rows = [&bits[..], &bits[..], &bits[..], &bits[..]];
                let want = reference::dot_bf16_ref(&bits, &x).to_bits();
                assert!(body.dot_bf16_rows4(rows, &widen(&x)).iter().all(|r| r.to_bits() == want), "{body} n={n}");
            }
        }
        for groups in [1usize, 2, 5, 112] {
            let cols = 32 * groups;
            let mut packed: Vec<u8> = (0..cols / 2).map(|_| rng.next_u32() as u8).collect();
            // One scale for all groups, so cancelling pairs may straddle groups.
            let scales = vec![127u8; groups];
            let mut x = rng.vec(cols, 3.0);
            plant_cancelling_pairs(&mut rng, &mut x, 1 + groups, |i| {
                // Code 2 is E2M1 +1.0; the low nibble is the even element.
                let shift = 4 * (i % 2);
                packed[i / 2] = (packed[i / 2] & !(0xF << shift)) | (2 << shift);
            });
            let want = reference::dot_mxfp4_ref(&packed, &scales, &x).to_bits();
            assert_eq!(body.dot_mxfp4(&packed, &scales, &widen(&x)).to_bits(), want, "{body} groups={groups}");
            let mut out = [0.0f32; 2];
            let xs = widen(&[x.clone(), x.clone()].concat());
            body.dot_mxfp4_batch(&packed, &scales, &xs, &mut out);
            assert!(out.iter().all(|o| o.to_bits() == want), "{body} batched groups={groups}");
        }
    }
}

/// Runs `f` from a frame `PAD` bytes deeper, so the kernels inside start at another stack
/// alignment (the stack is 16-byte aligned; 64-byte vectors kept on it need realignment).
#[inline(never)]
fn with_stack_pad<const PAD: usize>(f: &dyn Fn()) {
    let pad = [0u8; PAD];
    std::hint::black_box(&pad);
    f();
    std::hint::black_box(&pad);
}

#[test]
fn every_body_runs_from_every_stack_alignment() {
    // A build of the AVX-512 one-row body once kept its 64-byte decode tables at a stack
    // slot the compiler had not aligned and stored them with an aligned move: a crash
    // whenever the caller's stack sat at an odd multiple of 16. Each body is called from
    // four stack depths 16 bytes apart, so every alignment mod 64 is met.
    let mut rng = Lcg(21);
    let (groups, n_tokens) = (11usize, 10usize);
    let cols = groups * 32;
    let packed: Vec<u8> = (0..cols / 2).map(|_| rng.next_u32() as u8).collect();
    let scales: Vec<u8> = (0..groups).map(|_| 115 + (rng.next_u32() % 20) as u8).collect();
    let xs32 = rng.vec(cols * n_tokens, 3.0);
    let xs = widen(&xs32);
    let bf16 = bf16_bits(&mut rng, cols);
    let one_token = reference::dot_mxfp4_ref(&packed, &scales, &xs32[..cols]);
    let dense = reference::dot_bf16_ref(&bf16, &xs32[..cols]);
    let calls = std::cell::Cell::new(0);
    let run_all = || {
        for body in available() {
            let got = body.dot_mxfp4(&packed, &scales, &xs[..cols]);
            assert_eq!(got.to_bits(), one_token.to_bits(), "{body} one row");
            let mut batch = vec![0.0f32; n_tokens];
            body.dot_mxfp4_batch(&packed, &scales, &xs, &mut batch);
            assert_eq!(batch[0].to_bits(), one_token.to_bits(), "{body} tokens");
            let rows = body.dot_bf16_rows4([&bf16[..], &bf16[..], &bf16[..], &bf16[..]], &xs[..cols]);
            assert_eq!(rows[3].to_bits(), dense.to_bits(), "{body} four bf16 rows");
            assert_eq!(body.dot_bf16(&bf16, &xs[..cols]).to_bits(), dense.to_bits(), "{body} bf16");
            calls.set(calls.get() + 1);
        }
    };
    with_stack_pad::<16>(&run_all);
    with_stack_pad::<32>(&run_all);
    with_stack_pad::<48>(&run_all);
    with_stack_pad::<64>(&run_all);
    assert_eq!(calls.get(), 4 * available().len());
}

#[test]
fn latent_scores_equal_their_twin_on_every_isa_for_every_block_shape() {
    let mut rng = Lcg(21);
    for body in available() {
        // Widths with and without a 16-lane tail (the tiny checkpoints' 40, K3's 576);
        // row and query counts that leave every remainder of the 2 × 4 blocking.
        for width in [1usize, 16, 40, 576] {
            for (n_rows, n_q) in [(1usize, 1usize), (2, 4), (3, 5), (16, 8), (7, 3), (17, 9)] {
                let mut rows = rng.vec(n_rows * width, 2.0);
                let mut queries = rng.vec(n_q * width, 3.0);
                // Cancelling pairs inside each row, met by unit query elements, so a
                // wrong lane or tree shows in the f32 result.
                let mut units = Vec::new();
                for row in rows.chunks_exact_mut(width) {
                    plant_cancelling_pairs(&mut rng, row, 1 + width / 64, |i| units.push(i));
                }
                for q in queries.chunks_exact_mut(width) {
                    units.iter().for_each(|&i| q[i] = 1.0);
                }
                let stride = n_rows + 3;
                let mut out = vec![f32::NAN; (n_q - 1) * stride + n_rows];
                body.dot_f32_queries(&rows, width, &widen(&queries), &mut out, stride);
                let want = reference::dot_f32_queries_ref(&rows, width, &queries);
                for q in 0..n_q {
                    for r in 0..n_rows {
                        let (got, want) = (out[q * stride + r], want[q * n_rows + r]);
                        assert_eq!(got.to_bits(), want.to_bits(), "{body} width={width} row {r} query {q}");
                    }
                }
            }
        }
        eprintln!("dot_f32_queries: {body} equals the reference twin");
    }
}

#[test]
fn latent_mixing_equals_its_twin_on_every_isa() {
    let mut rng = Lcg(22);
    for body in available() {
        for (width, row_stride) in [(1usize, 1usize), (8, 9), (32, 40), (100, 100), (512, 576)] {
            for (n_rows, n_q) in [(1usize, 1usize), (5, 2), (16, 4), (33, 3)] {
                let rows = rng.vec(n_rows * row_stride, 2.0);
                let w_stride = n_rows + 2;
                let weights = rng.vec((n_q - 1) * w_stride + n_rows, 1.0);
                let start = rng.vec(n_q * width, 1.0);
                let mut acc = start.clone();
                body.accumulate_weighted_rows_f32(&weights, w_stride, &rows, row_stride, &mut acc, width);
                let want =
                    reference::accumulate_weighted_rows_f32_ref(&weights, w_stride, &rows, row_stride, &start, width);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&acc), bits(&want), "{body} width={width} rows={n_rows} heads={n_q}");
            }
        }
        eprintln!("accumulate_weighted_rows_f32: {body} equals the reference twin");
    }
}

#[test]
fn transposed_rows_sum_in_row_order_like_their_twin() {
    let mut rng = Lcg(23);
    for (rows, cols) in [(1usize, 1usize), (3, 40), (24, 32), (128, 512)] {
        let mut x = rng.vec(rows, 3.0);
        let w = rng.vec(rows * cols, 2.0);
        plant_cancelling_pairs(&mut rng, &mut x, 1 + rows / 16, |_| {});
        let bits: Vec<u16> = w.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
        let (mut acc_f32, mut acc_bf16) = (vec![0.0f64; cols], vec![0.0f64; cols]);
        for (i, &xi) in x.iter().enumerate() {
            kernels::dot::accumulate_scaled_row_f32(&w[i * cols..(i + 1) * cols], f64::from(xi), &mut acc_f32);
            kernels::dot::accumulate_scaled_row_bf16(&bits[i * cols..(i + 1) * cols], f64::from(xi), &mut acc_bf16);
        }
        let wide: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
        let wide_bf16: Vec<f64> = bits.iter().map(|&b| f64::from(reference::bf16_to_f32_ref(b))).collect();
        let round = |acc: Vec<f64>| acc.into_iter().map(|a| (a as f32).to_bits()).collect::<Vec<_>>();
        let twin =
            |w: &[f64]| reference::transposed_matvec_ref(w, cols, &x).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(round(acc_f32), twin(&wide), "f32 {rows}x{cols}");
        assert_eq!(round(acc_bf16), twin(&wide_bf16), "bf16 {rows}x{cols}");
    }
}
