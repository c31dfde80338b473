//! The batched BF16 product (several tokens against each row: prefill chunks, verify
//! passes, batches of sequences) equals the one-token kernel and its twin bit for bit, on
//! every body, at odd shapes: spans, token tiles and column blocks with ragged ends.

use k3_kernels::dispatch::{available, best, select};
use k3_kernels::{bf16_batch, dot, reference, widen};

use super::{bf16_bits, dot_lengths, plant_cancelling_pairs, same_or_both_nan, Lcg, KERNEL_BODY};

#[test]
fn bf16_against_several_tokens_equals_the_twin_on_every_isa() {
    let mut rng = Lcg(21);
    for body in available() {
        for n in dot_lengths() {
            for n_tokens in [1usize, 2, 3, 4, 5, 7, 8, 9, 12, 17] {
                let w = bf16_bits(&mut rng, n);
                let xs32 = rng.vec(n * n_tokens, 3.0);
                let mut out = vec![0.0f32; n_tokens];
                body.dot_bf16_tokens(&w, &widen(&xs32), &mut out);
                let want = reference::dot_bf16_tokens_ref(&w, &xs32);
                for (t, (&got, &want)) in out.iter().zip(&want).enumerate() {
                    assert!(same_or_both_nan(got, want), "{body} n={n} token {t} of {n_tokens}");
                }
            }
        }
        eprintln!("dot_bf16_tokens: {body} equals the reference twin");
    }
}

#[test]
fn a_bf16_row_summed_in_spans_with_strided_tokens_equals_the_whole_row_on_every_isa() {
    let mut rng = Lcg(22);
    let (cols, n_tokens) = (16 * 29 + 5, 8usize);
    let w = bf16_bits(&mut rng, cols);
    let xs32 = rng.vec(cols * n_tokens, 3.0);
    let xs = widen(&xs32);
    for body in available() {
        // Spans 0..80, 80..272, 272..464 in order, tokens at stride `cols`; then the tail.
        let mut lanes = vec![[0.0f64; 16]; n_tokens];
        for (c0, c1) in [(0usize, 80usize), (80, 272), (272, 464)] {
            body.bf16_accumulate_tokens(&w[c0..c1], &xs[c0..], cols, &mut lanes);
        }
        let mut whole = vec![0.0f32; n_tokens];
        body.dot_bf16_tokens(&w, &xs, &mut whole);
        for (t, l) in lanes.iter().enumerate() {
            let want = reference::dot_bf16_ref(&w, &xs32[t * cols..(t + 1) * cols]);
            assert!(same_or_both_nan(whole[t], want), "{body} whole row, token {t}");
            let mut direct = vec![0.0f32; 1];
            body.dot_bf16_tokens(&w, &xs[t * cols..(t + 1) * cols], &mut direct);
            assert_eq!(direct[0].to_bits(), whole[t].to_bits(), "{body} one token alone, token {t}");
            // The spans' lanes, finished with the tail, are the whole row's result.
            let finished = dot::finish_dense_bf16(l, &w[464..], &xs[t * cols + 464..(t + 1) * cols]);
            assert_eq!(finished.to_bits(), whole[t].to_bits(), "{body} spans, token {t}");
        }
    }
}

#[test]
fn the_cache_blocked_bf16_product_equals_the_twin_per_row_and_token() {
    // Columns past one block of 256 with a ragged tail; tokens past one tile of 12 (a
    // triple, a pair and one left over); rows 1, 5 and 9. On AVX-512, rows in pairs and
    // tokens in fours over several column blocks of 1024 (4 × 2100 against 9, 6 × 1040
    // against 8), with an odd row and tokens left over in the others.
    let mut rng = Lcg(23);
    let _body = KERNEL_BODY.lock().unwrap_or_else(|e| e.into_inner());
    let shapes =
        [(1usize, 7usize, 3usize), (5, 300, 13), (9, 1031, 26), (5, 16, 1), (3, 512, 14), (4, 2100, 9), (6, 1040, 8)];
    for (rows, cols, n_tokens) in shapes {
        let w = bf16_bits(&mut rng, rows * cols);
        let mut xs32 = rng.vec(cols * n_tokens, 2.0);
        plant_cancelling_pairs(&mut rng, &mut xs32, 5.min(cols / 2), |_| {});
        let xs = widen(&xs32);
        for body in available() {
            select(body);
            let mut out = vec![0.0f32; rows * n_tokens];
            bf16_batch::bf16_rows_batch(&w, cols, &xs, &mut out);
            for r in 0..rows {
                let row = &w[r * cols..(r + 1) * cols];
                for t in 0..n_tokens {
                    let want = reference::dot_bf16_ref(row, &xs32[t * cols..(t + 1) * cols]);
                    let got = out[r * n_tokens + t];
                    assert!(same_or_both_nan(got, want), "{body} {rows}x{cols}, row {r} token {t} of {n_tokens}");
                }
            }
        }
    }
    select(best());
}
