//! The context a model opens at: without `--context-length`, the largest the plan keeps on
//! this machine (the preset's default context, `k3_plan::default_context`); with it, that
//! number, refused past the 1 M window.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

fn run(extra: &[&str]) -> Output {
    let model = fixture("tiny-mxfp4");
    let mut args = vec!["run", "--model", model.to_str().unwrap(), "--ids", "1,2,3", "--gen", "2", "--json"];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_k3")).args(&args).output().expect("spawn k3")
}

fn context_of(out: &Output) -> u64 {
    assert!(out.status.success(), "k3 failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    v["context_length"].as_u64().expect("context_length")
}

#[test]
fn without_a_context_length_the_model_opens_at_the_largest_its_plan_keeps() {
    // A tiny checkpoint's KV cache costs a few hundred bytes a position: on any machine that
    // runs the tests the fitted context is far past the 4,096 base, within the 1 M window.
    for budget in [&[][..], &["--preset", "laptop"][..]] {
        let fitted = context_of(&run(budget));
        assert!((4097..=1 << 20).contains(&fitted), "{budget:?}: fitted {fitted}");
    }
    assert_eq!(context_of(&run(&["--context-length", "96"])), 96);
    let past = run(&["--context-length", "1048577"]);
    assert_eq!(past.status.code(), Some(2), "{}", String::from_utf8_lossy(&past.stderr));
    assert!(String::from_utf8_lossy(&past.stderr).contains("context-length"));
}

#[test]
fn chat_says_the_context_it_opened_at() {
    let model = fixture("k3-demo");
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "2", "--context-length", "300"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn k3 chat");
    child.stdin.take().expect("stdin").write_all(b"/quit\n").expect("write");
    let out = child.wait_with_output().expect("k3 chat");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("(memory plan: every weight resident; context 300 positions)"), "{stderr}");
}
