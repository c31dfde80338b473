//! Every primitive op against the float64 reference fixtures in `fixtures/ops/`
//! (tolerance `ops` of `fixtures/MANIFEST.json`; the router's chosen ids first, then weights).

use k3_engine::advanced::kernels::{self, dot_bf16, dot_f32, dot_mxfp4, widen};
use k3_engine::advanced::model::attn_res::{attn_res_mix, fold};
use k3_engine::advanced::model::kda::{kda_recurrence_step, short_conv_step, KdaStep};
use k3_engine::advanced::model::moe::route;
use k3_tests::{assert_close, f32s, f64s, fixture, read_json, tolerance, u64s, Tolerance};
use serde_json::Value;

fn cases(op: &str) -> Vec<Value> {
    let v = read_json(&fixture("ops").join(format!("{op}.json")));
    let cases = v["cases"].as_array().expect("cases").clone();
    assert!(!cases.is_empty(), "{op}.json has no cases");
    cases
}

fn tol() -> Tolerance {
    tolerance("ops")
}

fn usize_of(v: &Value) -> usize {
    v.as_u64().expect("integer") as usize
}

fn bytes(v: &Value) -> Vec<u8> {
    u64s(v).into_iter().map(|b| u8::try_from(b).expect("byte")).collect()
}

/// A list of equal-length rows, flattened.
fn rows_f64(v: &Value) -> Vec<f64> {
    v.as_array().expect("rows").iter().flat_map(f64s).collect()
}

#[test]
fn rmsnorm_matches_reference() {
    for (i, c) in cases("rmsnorm").iter().enumerate() {
        let (x, w) = (f32s(&c["x"]), f32s(&c["w"]));
        let mut out = vec![0.0; x.len()];
        kernels::rmsnorm(&x, &w, c["eps"].as_f64().unwrap() as f32, &mut out);
        assert_close(&format!("rmsnorm case {i} (n={})", x.len()), &out, &f64s(&c["expected"]), tol());
    }
}

#[test]
fn l2norm_matches_reference() {
    for (i, c) in cases("l2norm").iter().enumerate() {
        let mut x = f32s(&c["x"]);
        kernels::l2norm(&mut x);
        assert_close(&format!("l2norm case {i}"), &x, &f64s(&c["expected"]), tol());
    }
}

#[test]
fn situ_glu_matches_reference() {
    for (i, c) in cases("situ_glu").iter().enumerate() {
        let (g, u) = (f32s(&c["gate"]), f32s(&c["up"]));
        let mut out = vec![0.0; g.len()];
        let (b1, b2) = (c["beta1"].as_f64().unwrap() as f32, c["beta2"].as_f64().unwrap() as f32);
        kernels::situ_glu(&g, &u, b1, b2, &mut out);
        assert_close(&format!("situ_glu case {i}"), &out, &f64s(&c["expected"]), tol());
    }
}

#[test]
fn shortconv_with_carried_state_matches_reference() {
    for (i, c) in cases("shortconv").iter().enumerate() {
        let kernel = usize_of(&c["kernel"]);
        let taps = f32s(&c["weight"]);
        let mut hist = f32s(&c["state_in"]);
        let mut outputs = Vec::new();
        for step in c["inputs"].as_array().unwrap() {
            let mut x = f32s(step);
            short_conv_step(&mut x, &taps, &mut hist, kernel);
            outputs.extend(x);
        }
        assert_close(&format!("shortconv case {i} outputs"), &outputs, &rows_f64(&c["expected"]), tol());
        assert_close(&format!("shortconv case {i} state"), &hist, &f64s(&c["state_out"]), tol());
    }
}

#[test]
fn kda_recurrence_matches_reference() {
    for (i, c) in cases("kda_recurrence").iter().enumerate() {
        let d = usize_of(&c["d"]);
        let mut s = f32s(&c["state_in"]);
        let (mut u, mut o) = (vec![0.0; d], vec![0.0; d]);
        let mut outputs = Vec::new();
        for step in c["steps"].as_array().unwrap() {
            let (q, k, v, alpha) = (f32s(&step["q"]), f32s(&step["k"]), f32s(&step["v"]), f32s(&step["alpha"]));
            let beta = step["beta"].as_f64().unwrap() as f32;
            kda_recurrence_step(&mut s, &KdaStep { q: &q, k: &k, v: &v, alpha: &alpha, beta }, &mut u, &mut o);
            outputs.extend_from_slice(&o);
        }
        assert_close(&format!("kda case {i} (d={d}) outputs"), &outputs, &rows_f64(&c["expected"]), tol());
        assert_close(&format!("kda case {i} final state"), &s, &f64s(&c["state_out"]), tol());
    }
}

#[test]
fn attn_res_matches_reference() {
    for (i, c) in cases("attn_res").iter().enumerate() {
        let sources: Vec<Vec<f32>> = c["sources"].as_array().unwrap().iter().map(f32s).collect();
        let refs: Vec<&[f32]> = sources.iter().map(Vec::as_slice).collect();
        let f = fold(&f32s(&c["norm_w"]), &f32s(&c["proj_w"]));
        let mut out = vec![0.0; f.len()];
        attn_res_mix(&refs, &f, c["eps"].as_f64().unwrap() as f32, &mut out);
        assert_close(&format!("attn_res case {i} ({} sources)", refs.len()), &out, &f64s(&c["expected"]), tol());
    }
}

#[test]
fn router_selects_by_biased_score_and_weights_by_raw_score() {
    for (i, c) in cases("router").iter().enumerate() {
        let x = widen(&f32s(&c["x"]));
        let logits: Vec<f32> = c["weight"].as_array().unwrap().iter().map(|row| dot_f32(&f32s(row), &x)).collect();
        let r = route(
            &logits,
            &f32s(&c["bias"]),
            usize_of(&c["top_k"]),
            c["renormalize"].as_bool().unwrap(),
            c["scaling"].as_f64().unwrap() as f32,
        );
        let want_ids: Vec<usize> = u64s(&c["expected_ids"]).into_iter().map(|v| v as usize).collect();
        assert_eq!(r.experts, want_ids, "router case {i}: selected ids");
        assert_close(&format!("router case {i} weights"), &r.weights, &f64s(&c["expected_weights"]), tol());
    }
}

#[test]
fn bf16_matvec_matches_reference() {
    for (i, c) in cases("matvec_bf16").iter().enumerate() {
        let (rows, cols) = (usize_of(&c["rows"]), usize_of(&c["cols"]));
        let w: Vec<u16> = u64s(&c["w_bits"]).into_iter().map(|b| b as u16).collect();
        let x = widen(&f32s(&c["x"]));
        let y: Vec<f32> = (0..rows).map(|r| dot_bf16(&w[r * cols..(r + 1) * cols], &x)).collect();
        assert_close(&format!("matvec_bf16 case {i} ({rows}x{cols})"), &y, &f64s(&c["expected"]), tol());
    }
}

#[test]
fn mxfp4_matvec_matches_reference() {
    for (i, c) in cases("matvec_mxfp4").iter().enumerate() {
        let (rows, cols) = (usize_of(&c["rows"]), usize_of(&c["cols"]));
        let (packed, scales, x) = (bytes(&c["packed"]), bytes(&c["scales"]), widen(&f32s(&c["x"])));
        let y: Vec<f32> = (0..rows)
            .map(|r| {
                dot_mxfp4(&packed[r * cols / 2..(r + 1) * cols / 2], &scales[r * cols / 32..(r + 1) * cols / 32], &x)
            })
            .collect();
        assert_close(&format!("matvec_mxfp4 case {i} ({rows}x{cols})"), &y, &f64s(&c["expected"]), tol());
    }
}
