//! `k3 run`'s decode modes and sampling flags: full recompute equals incremental decoding,
//! the same seed gives the same tokens, and temperature 0 is greedy.

use crate::cli::{csv, fixture, golden, k3, stdout_json};

#[test]
fn full_recompute_and_sampling_flags_work() {
    let g = golden("tiny-f32");
    let model = fixture("tiny-f32");
    let ids = csv(&g["prompt_ids"]);
    let base = ["run", "--model", model.to_str().unwrap(), "--ids", ids.as_str(), "--gen", "4", "--json"];
    let full = stdout_json(&k3(&[&base[..], &["--full-recompute"]].concat()));
    let inc = stdout_json(&k3(&base));
    assert_eq!(full["generated_ids"], inc["generated_ids"]);
    let sample = |seed: &str| {
        stdout_json(&k3(&[&base[..], &["--temperature", "1.5", "--top-p", "0.9", "--seed", seed]].concat()))
            ["generated_ids"]
            .clone()
    };
    assert_eq!(sample("7"), sample("7"), "the same seed gives the same tokens");
    // Temperature 0 is greedy, as in the app and the server (one rule: `Sampling::from_user`).
    let zero = stdout_json(&k3(&[&base[..], &["--temperature", "0", "--seed", "9"]].concat()));
    assert_eq!(zero["generated_ids"], inc["generated_ids"]);
}
