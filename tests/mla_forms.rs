//! The latent MLA cache with absorbed attention against the expanded form it replaced
//! (`MlaWeights::forward_expanded_reference`, the plain twin): every MLA layer of every tiny
//! checkpoint, 300 positions fed as 1 + 63 + 236 tokens, so every output from position 1 to
//! 300 is compared, within the manifest's `mla_forms` tolerance.

use k3_engine::advanced::model::bind::Binder;
use k3_engine::advanced::model::mla::{MlaCache, MlaWeights};
use k3_engine::events::CancelToken;
use k3_engine::{LayerKind, ModelConfig};
use k3_io::format::TensorIndex;
use k3_tests::{assert_close, fixture, tolerance, TINY_CHECKPOINTS};

/// Inputs of about unit size, like the normed hidden states an MLA layer sees.
fn inputs(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32 - 1.0) * 1.7
        })
        .collect()
}

#[test]
fn latent_and_expanded_attention_agree_at_1_to_300_positions_on_every_tiny_checkpoint() {
    const CHUNKS: [usize; 3] = [1, 63, 236];
    let tol = tolerance("mla_forms");
    for name in TINY_CHECKPOINTS {
        let dir = fixture(name);
        let cfg = ModelConfig::load(&dir.join("config.json")).unwrap();
        let index = TensorIndex::open(&dir).unwrap();
        let binder = Binder::new(&index, true);
        let e = cfg.hidden_size;
        let total: usize = CHUNKS.iter().sum();
        for (l, _) in cfg.layer_kinds.iter().enumerate().filter(|(_, k)| **k == LayerKind::Mla) {
            let w = MlaWeights::bind(&binder, &cfg, l).unwrap();
            let xs = inputs(l as u64 + 1, total * e);
            let (mut latent, mut expanded) =
                (MlaCache::with_capacity(&cfg, total), MlaCache::with_capacity(&cfg, total));
            let (mut got, mut want) = (vec![0.0f32; total * e], vec![0.0f32; total * e]);
            let mut at = 0;
            for n in CHUNKS {
                let span = at * e..(at + n) * e;
                w.forward(&cfg, &xs[span.clone()], &mut latent, &mut got[span.clone()], &CancelToken::new()).unwrap();
                w.forward_expanded_reference(&cfg, &xs[span.clone()], &mut expanded, &mut want[span]).unwrap();
                at += n;
            }
            assert!(latent.same_bits(&expanded), "{name} layer {l}: both forms cache the same latent rows");
            let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
            let worst = assert_close(&format!("{name} layer {l}: latent vs expanded"), &got, &want, tol);
            eprintln!(
                "{name} layer {l}: {total} positions, worst |latent - expanded| {:.3e} (rel {:.3e}) at {}",
                worst.abs_err, worst.rel_err, worst.index
            );
        }
    }
}
