//! Every layer against the reference: the attention output, the FFN/MoE output and the
//! running prefix of every layer, and the final hidden state, at every
//! teacher-forced position, read through the model's tap (no copy of the forward pass).

use k3_engine::advanced::model::{LayerTap, Tap};
use k3_engine::CancelToken;
use k3_tests::{assert_close, fixture, read_f64, tolerance, TINY_CHECKPOINTS};

use crate::gates::{engine, golden};

#[derive(Default)]
struct Recorder {
    /// Per layer: attn_out, mlp_out, prefix, each `[n][E]`.
    layers: Vec<[Vec<f32>; 3]>,
    final_hidden: Vec<f32>,
}

impl Tap for Recorder {
    fn layer(&mut self, tap: &LayerTap<'_>) {
        assert_eq!(tap.layer_idx, self.layers.len(), "layers arrive in order");
        self.layers.push([tap.attn_out.to_vec(), tap.mlp_out.to_vec(), tap.prefix.to_vec()]);
    }
    fn final_hidden(&mut self, x: &[f32]) {
        self.final_hidden = x.to_vec();
    }
}

#[test]
fn every_layer_stage_matches_reference_taps() {
    let tol = tolerance("taps");
    const STAGES: [&str; 3] = ["attention output", "mlp output", "prefix"];
    for name in TINY_CHECKPOINTS {
        let g = golden(name);
        let e = engine(name, None);
        let mut rec = Recorder::default();
        e.score(&g.full, &CancelToken::new(), Some(&mut rec)).unwrap().unwrap();
        let taps = read_f64(&fixture(name).join("golden/taps.f64"));
        let per_stage = g.full.len() * e.config().hidden_size;
        assert_eq!(taps.len(), e.config().n_layers * 3 * per_stage, "{name}: taps.f64 size");
        assert_eq!(rec.layers.len(), e.config().n_layers);
        for (l, stages) in rec.layers.iter().enumerate() {
            for (s, got) in stages.iter().enumerate() {
                let start = (l * 3 + s) * per_stage;
                let kind = e.config().layer_kinds[l];
                let what = format!("{name}: layer {l} ({kind:?}) {}", STAGES[s]);
                assert_close(&what, got, &taps[start..start + per_stage], tol);
            }
        }
        let want = read_f64(&fixture(name).join("golden/final_hidden.f64"));
        assert_close(&format!("{name}: final hidden"), &rec.final_hidden, &want, tol);
    }
}
