//! What bounds the MXFP4 kernels: machine port probes next to the kernels' parts, one thread.
//!
//! `cargo run --release -p k3-engine --example mxfp4_bound` prints (minimum of several
//! runs): this CPU's 512-bit f64 FMA and `vpermd` throughput, the contract's decode + FMA
//! alone for a 3072×3584 expert matrix (no reduction, so not the contract's result), the
//! one-row body of each ISA and the cache-blocked 64-token product, in cycles per group at
//! the clock `K3_PROBE_GHZ` (default 2.6, this machine kind's measured integer clock).
//! Needs AVX-512 (F and BW, found by `DetectedIsa::detect`); a diagnostic, not a test. On
//! other architectures it is built (so `--all-targets` builds) but only says so.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
#[cfg(target_arch = "x86_64")]
use std::hint::black_box;
#[cfg(target_arch = "x86_64")]
use std::time::Instant;

#[cfg(target_arch = "x86_64")]
use k3_engine::advanced::kernels::dispatch::{available, select, DetectedIsa, Isa};
#[cfg(target_arch = "x86_64")]
use k3_engine::advanced::kernels::dot::E2M1_F64_HIGH_WORDS;
#[cfg(target_arch = "x86_64")]
use k3_engine::advanced::kernels::mxfp4_batch::mxfp4_rows_batch;

#[cfg(target_arch = "x86_64")]
const ROWS: usize = 3072;
#[cfg(target_arch = "x86_64")]
const COLS: usize = 3584;
#[cfg(target_arch = "x86_64")]
const GROUPS: usize = ROWS * COLS / 32;

#[cfg(target_arch = "x86_64")]
/// Twelve independent FMA chains (latency 4 × 2 ports + spare): the FMA ports' throughput.
#[target_feature(enable = "avx512f")]
#[allow(clippy::needless_range_loop)] // indexed, so the chains stay in registers
fn fma_probe(n: usize) -> f64 {
    let mut acc = [_mm512_set1_pd(1.0); 12];
    let (m, c) = (_mm512_set1_pd(0.999_999_9), _mm512_set1_pd(1e-9));
    for _ in 0..n {
        for k in 0..12 {
            acc[k] = _mm512_fmadd_pd(acc[k], m, c);
        }
    }
    acc.iter().map(|&a| _mm512_reduce_add_pd(a)).sum()
}

#[cfg(target_arch = "x86_64")]
/// Eight independent `vpermd` chains: the shuffle port's throughput.
#[target_feature(enable = "avx512f")]
fn permute_probe(n: usize) -> i64 {
    let mut acc: [__m512i; 8] = std::array::from_fn(|k| _mm512_set1_epi32(k as i32));
    let table = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0);
    for _ in 0..n {
        for a in acc.iter_mut() {
            *a = _mm512_permutexvar_epi32(*a, table);
        }
    }
    acc.iter().map(|&a| i64::from(_mm512_reduce_add_epi32(a))).sum()
}

#[cfg(target_arch = "x86_64")]
/// The MXFP4 decode and the contract's FMAs of one row with lanes carried across groups:
/// the work every group needs before its reduction. The decode mirrors the engine's private
/// `mxfp4_avx512::decode_pair` (broadcast, rotate, 16-entry `vpermd`, shift/mask split);
/// keep the two in step.
///
/// # Safety
/// `packed.len() * 2 == x.len()`, a multiple of 32.
#[target_feature(enable = "avx512f")]
unsafe fn decode_and_fma_only(packed: &[u8], x: &[f64]) -> f64 {
    let hi = E2M1_F64_HIGH_WORDS.map(|w| w as i32);
    // SAFETY: 64 readable bytes.
    let words = unsafe { _mm512_loadu_si512(hi.as_ptr().cast()) };
    let shifts = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    let high = _mm512_set1_epi64(-1 << 32);
    let mut acc = [_mm512_setzero_pd(); 4];
    for g in 0..x.len() / 32 {
        for h in 0..2 {
            // SAFETY: bytes 16g + 8h .. +8 and x[32g + 16h ..][..16] are in bounds.
            let (pair, x0, x1) = unsafe {
                let at = 32 * g + 16 * h;
                (
                    std::ptr::read_unaligned(packed.as_ptr().add(16 * g + 8 * h).cast::<u64>()),
                    _mm512_loadu_pd(x.as_ptr().add(at)),
                    _mm512_loadu_pd(x.as_ptr().add(at + 8)),
                )
            };
            let v = _mm512_permutexvar_epi32(_mm512_rorv_epi32(_mm512_set1_epi64(pair as i64), shifts), words);
            acc[2 * h] = _mm512_fmadd_pd(_mm512_castsi512_pd(_mm512_slli_epi64::<32>(v)), x0, acc[2 * h]);
            acc[2 * h + 1] = _mm512_fmadd_pd(_mm512_castsi512_pd(_mm512_and_si512(v, high)), x1, acc[2 * h + 1]);
        }
    }
    acc.iter().map(|&a| _mm512_reduce_add_pd(a)).sum()
}

#[cfg(target_arch = "x86_64")]
/// Minimum wall time of `reps` runs of `f`, in seconds.
fn min_time(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("mxfp4_bound needs an x86-64 CPU with AVX-512");
    std::process::exit(1);
}

#[cfg(target_arch = "x86_64")]
fn main() {
    // The probes below and the AVX-512 kernel bodies need AVX-512F and BW: only detection
    // makes the `DetectedIsa` that proves both.
    let avx512 = match DetectedIsa::detect(Isa::Avx512) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("mxfp4_bound needs AVX-512: {e}");
            std::process::exit(1);
        }
    };
    let hz = std::env::var("K3_PROBE_GHZ").ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(2.6) * 1e9;
    let n = 20_000_000usize;
    // SAFETY (all three probes): `avx512` proves the CPU has AVX-512F (`DetectedIsa`'s
    // invariant: it holds `Avx512` only after runtime detection of AVX-512F and BW).
    let fma = min_time(5, || {
        black_box(unsafe { fma_probe(n) });
    });
    let perm = min_time(5, || {
        black_box(unsafe { permute_probe(n) });
    });
    println!(
        "512-bit f64 FMA: {:.2} per ns ({:.2} per cycle); vpermd: {:.2} per ns ({:.2} per cycle)",
        12.0 * n as f64 / fma / 1e9,
        12.0 * n as f64 / fma / hz,
        8.0 * n as f64 / perm / 1e9,
        8.0 * n as f64 / perm / hz
    );

    let mut state = 1u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let packed: Vec<u8> = (0..ROWS * COLS / 2).map(|_| next() as u8).collect();
    let scales: Vec<u8> = (0..GROUPS).map(|_| 120 + (next() % 8) as u8).collect();
    let x: Vec<f64> = (0..COLS).map(|_| f64::from(next()) / 4e9 - 0.5).collect();
    let row = |r: usize| (&packed[r * COLS / 2..(r + 1) * COLS / 2], &scales[r * COLS / 32..(r + 1) * COLS / 32]);
    let report = |name: &str, secs: f64, per: usize| {
        println!("{name:34} {:8.3} ms per matrix  {:5.1} cycles per group", secs * 1e3, secs * hz / per as f64);
    };
    // SAFETY: AVX-512F proved by `avx512` above; row lengths per the constants.
    let parts = min_time(15, || {
        (0..ROWS).for_each(|r| {
            black_box(unsafe { decode_and_fma_only(row(r).0, &x) });
        })
    });
    report("decode + FMA only (no reduction)", parts, GROUPS);
    for body in available().into_iter().rev() {
        let t = min_time(15, || {
            (0..ROWS).for_each(|r| {
                black_box(body.dot_mxfp4(row(r).0, row(r).1, &x));
            })
        });
        report(&format!("one-row body, {body}"), t, GROUPS);
    }
    select(avx512);
    let n_tokens = 64;
    let xs: Vec<f64> = (0..n_tokens * COLS).map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5).collect();
    let mut out = vec![0f32; ROWS * n_tokens];
    let t = min_time(5, || mxfp4_rows_batch(&packed, &scales, COLS, &xs, &mut out));
    report("blocked product, 64 tokens", t, GROUPS * n_tokens);
    // The tokens body on eight tokens that share one activation vector (stride 0): its
    // activation loads always hit the same 28 KiB, so the difference to a real batch of
    // eight shows what reading eight tokens' activations costs.
    for (name, stride) in [("tokens body, 8 tokens, stride 0", 0), ("tokens body, 8 tokens, own rows", COLS)] {
        let xs8 = &xs[..7 * stride + COLS];
        let mut totals = [0.0f64; 8];
        let t = min_time(5, || {
            for r in 0..ROWS {
                avx512.mxfp4_accumulate_tokens(row(r).0, row(r).1, xs8, stride, &mut totals);
            }
        });
        black_box(&totals);
        report(name, t, GROUPS * 8);
    }
    black_box(&out);
}
