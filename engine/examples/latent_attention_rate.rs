//! Times the three parts of latent attention for one MLA layer at K3's sizes (96 heads,
//! 512 + 64 floats per position) over `--positions` cached positions, one decoded token:
//! scores (`dot_f32_queries`), softmax, and mixing (`accumulate_weighted_rows_f32`), on one
//! thread, each part the best of five runs.
//!
//! `cargo run --release -p k3-engine --example latent_attention_rate -- 32768`

use std::time::Instant;

use k3_engine::advanced::kernels::{accumulate_weighted_rows_f32, dot_f32_queries, widen};
use k3_engine::advanced::model::softmax::softmax_weights;

fn main() {
    let positions: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(32_768);
    let (heads, lora, width) = (96usize, 512usize, 576usize);
    let mut x = 1u64;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((x >> 33) as f32 / (1u64 << 31) as f32) - 1.0
    };
    let rows: Vec<f32> = (0..positions * width).map(|_| next()).collect();
    let queries = widen(&(0..heads * width).map(|_| next() * 0.05).collect::<Vec<f32>>());
    let mut scores = vec![0.0f32; heads * positions];
    let mut mix = vec![0.0f32; heads * lora];
    let best = |f: &mut dyn FnMut()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let block = k3_engine::advanced::model::mla::POSITION_BLOCK;
    let score_s = best(&mut || {
        for s in (0..positions).step_by(block) {
            let e = (s + block).min(positions);
            dot_f32_queries(&rows[s * width..e * width], width, &queries, &mut scores[s..], positions);
        }
    });
    let soft_s = best(&mut || {
        for h in scores.chunks_exact_mut(positions) {
            softmax_weights(h);
        }
    });
    let mix_s = best(&mut || {
        for s in (0..positions).step_by(block) {
            let e = (s + block).min(positions);
            accumulate_weighted_rows_f32(&scores[s..], positions, &rows[s * width..e * width], width, &mut mix, lora);
        }
    });
    let pairs = (heads * positions) as f64;
    println!(
        "{positions} positions × {heads} heads, one thread ({}): scores {:.1} ms ({:.1} ns/pair), softmax {:.1} ms, mixing {:.1} ms ({:.1} ns/pair)",
        k3_engine::advanced::kernels::dispatch::current(),
        score_s * 1e3,
        score_s * 1e9 / pairs,
        soft_s * 1e3,
        mix_s * 1e3,
        mix_s * 1e9 / pairs
    );
}
