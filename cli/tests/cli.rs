//! The `k3` command's contract, driven as a real process: JSON fields, logit dumps, and
//! exit statuses (2 for unusable input with a one-line message, 0 on success).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn k3(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_k3")).args(args).output().expect("spawn k3")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

fn golden(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name).join("golden/golden.json")).unwrap()).unwrap()
}

fn csv(v: &Value) -> String {
    v.as_array().unwrap().iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "k3 failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("k3-cli-{}-{name}", std::process::id()))
}

#[test]
fn run_json_reports_prompt_and_generated_ids_and_dumps_logits() {
    let g = golden("tiny-mxfp4");
    let model = fixture("tiny-mxfp4");
    let dump = tmp("run.f32");
    let out = k3(&[
        "run",
        "--model",
        model.to_str().unwrap(),
        "--ids",
        &csv(&g["prompt_ids"]),
        "--gen",
        "5",
        "--json",
        "--dump-logits",
        dump.to_str().unwrap(),
    ]);
    let v = stdout_json(&out);
    assert_eq!(v["prompt_ids"], g["prompt_ids"]);
    let expected: Vec<Value> = g["greedy_ids"].as_array().unwrap()[..5].to_vec();
    assert_eq!(v["generated_ids"], Value::Array(expected));
    let bytes = std::fs::read(&dump).unwrap();
    assert_eq!(bytes.len(), 5 * 768 * 4, "five rows of vocab_size little-endian f32");
    // Row 0 chose generated token 0: its arg-max must be that id.
    let row0: Vec<f32> = bytes[..768 * 4].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let argmax = row0.iter().enumerate().fold(0, |best, (i, &x)| if x > row0[best] { i } else { best });
    assert_eq!(Value::from(argmax), v["generated_ids"][0]);
    std::fs::remove_file(dump).ok();
}

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
}

#[test]
fn score_json_has_one_argmax_per_position_and_dumps_all_rows() {
    let g = golden("tiny-bf16-nonorm");
    let model = fixture("tiny-bf16-nonorm");
    let dump = tmp("score.f32");
    let out = k3(&[
        "score",
        "--model",
        model.to_str().unwrap(),
        "--ids",
        &csv(&g["full_ids"]),
        "--json",
        "--dump-logits",
        dump.to_str().unwrap(),
    ]);
    let v = stdout_json(&out);
    assert_eq!(v["argmax"], g["tf_argmax"]);
    assert_eq!(std::fs::metadata(&dump).unwrap().len(), 32 * 768 * 4);
    std::fs::remove_file(dump).ok();
}

/// Asserts exit status 2 with exactly one line on stderr containing `needle`.
fn assert_input_error(args: &[&str], needle: &str) {
    let out = k3(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected, got: {err}");
    assert!(err.contains(needle), "stderr `{err}` should mention `{needle}`");
}

#[test]
fn unusable_input_exits_2_with_a_named_one_line_message() {
    let model = fixture("tiny-mxfp4");
    let m = model.to_str().unwrap();
    assert_input_error(&["run", "--model", "/nonexistent/k3", "--ids", "1", "--gen", "1"], "/nonexistent/k3");
    assert_input_error(&["run", "--model", m, "--ids", "1,x,3", "--gen", "1"], "--ids");
    assert_input_error(&["run", "--model", m, "--ids", "1,99999", "--gen", "1"], "99999");
    assert_input_error(&["run", "--model", m, "--ids", "1"], "--gen");
    assert_input_error(&["run", "--model", m, "--ids", "1", "--gen", "1", "--temperature", "0"], "temperature");
    assert_input_error(
        &["run", "--model", m, "--ids", "1", "--gen", "1", "--temperature", "1", "--top-p", "1.5"],
        "top-p",
    );
    assert_input_error(&["run", "--model", m, "--ids", "1", "--gen", "1", "--threads", "0"], "threads");
    assert_input_error(&["run", "--model", m, "--prompt", "hello", "--gen", "1"], "tokenizer");
    assert_input_error(&["score", "--model", m, "--ids", ""], "--ids");
    assert_input_error(&["frobnicate"], "frobnicate");
    // A folder that is not a model: the message names the missing config.json.
    let empty = tmp("empty-model");
    std::fs::create_dir_all(&empty).unwrap();
    assert_input_error(&["score", "--model", empty.to_str().unwrap(), "--ids", "1"], "config.json");
    std::fs::remove_dir_all(empty).ok();
}
