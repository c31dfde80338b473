//! Byte-identical logits whatever the thread count, whatever the kernel body (portable,
//! AVX2, AVX-512), and whatever the decode mode: incremental, full recompute and one
//! teacher-forced pass agree bit for bit.

use k3_engine::advanced::kernels::dispatch;
use k3_engine::{CancelToken, DecodeMode};
use k3_tests::{KERNEL_BODY, TINY_CHECKPOINTS};

use crate::gates::{engine, golden, greedy};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn logits_are_byte_identical_at_1_2_and_4_threads() {
    for name in TINY_CHECKPOINTS {
        let g = golden(name);
        let runs: Vec<Vec<u32>> = [1, 2, 4]
            .iter()
            .map(|&t| bits(&engine(name, Some(t)).score(&g.full, &CancelToken::new(), None).unwrap().unwrap()))
            .collect();
        assert_eq!(runs[0], runs[1], "{name}: 1 vs 2 threads");
        assert_eq!(runs[0], runs[2], "{name}: 1 vs 4 threads");
        let (inc1, l1) = greedy(&engine(name, Some(1)), &g.prompt, 8, DecodeMode::Incremental);
        let (inc4, l4) = greedy(&engine(name, Some(4)), &g.prompt, 8, DecodeMode::Incremental);
        assert_eq!(inc1, inc4, "{name}: tokens at 1 vs 4 threads");
        assert_eq!(bits(&l1), bits(&l4), "{name}: decode logits at 1 vs 4 threads");
    }
}

#[test]
fn incremental_full_recompute_and_teacher_forcing_agree_bit_for_bit() {
    for name in TINY_CHECKPOINTS {
        let g = golden(name);
        let e = engine(name, Some(2));
        let vocab = e.config().vocab_size;
        let n = 10;
        let (inc_ids, inc) = greedy(&e, &g.prompt, n, DecodeMode::Incremental);
        let (full_ids, full) = greedy(&e, &g.prompt, n, DecodeMode::FullRecompute);
        assert_eq!(inc_ids, full_ids, "{name}: tokens");
        assert_eq!(bits(&inc), bits(&full), "{name}: incremental vs full-recompute logits");
        let mut seq = g.prompt.clone();
        seq.extend(&inc_ids[..n - 1]);
        let tf = e.score(&seq, &CancelToken::new(), None).unwrap().unwrap();
        let tail = &tf[(g.prompt.len() - 1) * vocab..];
        assert_eq!(bits(tail), bits(&inc), "{name}: teacher forcing vs incremental logits");
    }
}

#[test]
fn logits_are_byte_identical_on_every_kernel_body() {
    let _body = KERNEL_BODY.lock().unwrap_or_else(|e| e.into_inner());
    for name in TINY_CHECKPOINTS {
        let g = golden(name);
        let e = engine(name, Some(2));
        let mut runs = Vec::new();
        for body in dispatch::available() {
            dispatch::select(body);
            let scored = bits(&e.score(&g.full, &CancelToken::new(), None).unwrap().unwrap());
            let (ids, logits) = greedy(&e, &g.prompt, 6, DecodeMode::Incremental);
            runs.push((body, scored, ids, bits(&logits)));
        }
        dispatch::select(dispatch::best());
        let (first, rest) = runs.split_first().unwrap();
        for run in rest {
            assert_eq!(first.1, run.1, "{name}: teacher-forced logits, {:?} vs {:?}", first.0, run.0);
            assert_eq!(first.2, run.2, "{name}: greedy tokens, {:?} vs {:?}", first.0, run.0);
            assert_eq!(first.3, run.3, "{name}: decode logits, {:?} vs {:?}", first.0, run.0);
        }
        eprintln!("{name}: logits identical on {:?}", runs.iter().map(|r| r.0).collect::<Vec<_>>());
    }
}

/// issue 13: teacher forcing in chunks (so a long context never holds every position's
/// logits) is bit-identical to one pass over the whole sequence.
#[test]
fn chunked_scoring_equals_one_pass_bit_for_bit() {
    for name in TINY_CHECKPOINTS {
        let e = engine(name, Some(2));
        let seq: Vec<u32> = (0..150u32).map(|i| (i * 37 + 11) % 700).collect();
        let whole = e.score(&seq, &CancelToken::new(), None).unwrap().unwrap();
        let mut chunked = Vec::new();
        let mut firsts = Vec::new();
        let done = e
            .score_chunked(&seq, &CancelToken::new(), &mut |first, logits| {
                firsts.push(first);
                chunked.extend_from_slice(logits);
                Ok(())
            })
            .unwrap();
        assert!(done);
        assert_eq!(firsts, vec![0, 64, 128], "{name}: chunks of 64 positions");
        assert_eq!(bits(&chunked), bits(&whole), "{name}: chunked vs one pass");
    }
}
