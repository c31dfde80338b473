//! `k3 synth` as a process: JSON summary, a loadable result, the k3-mid size without
//! writing it, and exit status 2 with one line for unusable input.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn k3(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_k3")).args(args).output().expect("spawn k3")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("k3-cli-synth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "k3 failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

/// Exit status 2 and exactly one line on stderr containing `needle`.
fn assert_input_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err:?} should name {needle}");
}

#[test]
fn synth_writes_a_checkpoint_that_k3_run_loads() {
    let dir = tmp("small");
    let d = dir.to_str().unwrap();
    let args = ["synth", "--out", d, "--layers", "5", "--hidden", "64", "--experts", "4", "--seed", "3", "--json"];
    let v = stdout_json(&k3(&args));
    assert_eq!(v["layer_map"], "KKKMM");
    assert_eq!(v["n_shards"], 6);
    assert_eq!(v["tokenizer_copied"], true);
    let size: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_str().unwrap().ends_with(".safetensors"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(v["shard_bytes"].as_u64(), Some(size));
    let run = stdout_json(&k3(&["run", "--model", d, "--prompt", "hello", "--gen", "2", "--json"]));
    assert_eq!(run["generated_ids"].as_array().unwrap().len(), 2);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn k3_mid_size_is_known_without_writing_it() {
    let dir = tmp("never-written");
    let v = stdout_json(&k3(&["synth", "--preset", "k3-mid", "--out", dir.to_str().unwrap(), "--dry-run", "--json"]));
    assert_eq!(v["n_shards"], 5);
    assert_eq!(v["shard_bytes"].as_u64(), Some(9_238_154_680));
    assert!(!dir.exists());
}

#[test]
fn config_file_overrides_the_preset() {
    let dir = tmp("cfg");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("over.json");
    std::fs::write(&cfg, r#"{"num_hidden_layers": 3, "num_experts": 2, "expert_storage": "bf16"}"#).unwrap();
    let out = dir.join("out");
    let args = ["synth", "--out", out.to_str().unwrap(), "--config", cfg.to_str().unwrap(), "--dry-run", "--json"];
    assert_eq!(stdout_json(&k3(&args))["n_shards"], 4);
    std::fs::write(&cfg, r#"{"num_experts": "2"}"#).unwrap();
    assert_input_error(&k3(&args), "num_experts");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn unusable_input_exits_2_with_one_line() {
    let dir = tmp("busy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), b"x").unwrap();
    let d = dir.to_str().unwrap();
    assert_input_error(&k3(&["synth", "--out", d]), d);
    assert_input_error(&k3(&["synth", "--out", d, "--top-k", "99"]), "num_experts_per_token");
    assert_input_error(&k3(&["synth", "--out", d, "--preset", "huge"]), "huge");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "the folder is left as it was");
    std::fs::remove_dir_all(dir).ok();
}

/// issue 13: a dry run with 16,777,216 experts per layer allocated gigabytes planning them;
/// it is refused first, naming the field. `pack --out` onto a regular file and a shard that
/// is a symlink loop are input errors (exit 2), not failures.
#[test]
fn issue_13_absurd_synth_sizes_and_unusable_paths_exit_2() {
    let dir = k3_tests::scratch_dir("synth-absurd");
    let out = k3(&["synth", "--out", dir.join("o").to_str().unwrap(), "--experts", "16777216", "--dry-run", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("num_experts"));
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let model = k3_tests::fixture("tiny-mxfp4");
    let out = k3(&["pack", "--model", model.to_str().unwrap(), "--out", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "pack --out onto a file: {}", String::from_utf8_lossy(&out.stderr));
    // A symbolic link to itself (a loop) as Unix makes one.
    #[cfg(unix)]
    {
        let looped = k3_tests::copy_checkpoint("tiny-mxfp4", "synth-loop");
        let shard = std::fs::read_dir(&looped)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .unwrap();
        std::fs::remove_file(&shard).unwrap();
        std::os::unix::fs::symlink(&shard, &shard).unwrap();
        let out = k3(&["run", "--model", looped.to_str().unwrap(), "--ids", "1", "--gen", "1"]);
        assert_eq!(out.status.code(), Some(2), "a symlink-loop shard: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// `k3 synth` under a 4 GB address-space limit (`ulimit -v`), as the probe ran it.
#[cfg(unix)]
fn k3_limited(args: &[&str]) -> Output {
    let script = "ulimit -v 4000000; exec \"$0\" \"$@\"";
    Command::new("sh").arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_k3")).args(args).output().expect("spawn sh")
}

/// Probe findings (high): `--layers 1e9` sized its layer lists before the range check
/// (SIGABRT under a 4 GB limit, 17.6 GB for a dry run from a config), `--layers 100000
/// --dry-run` took 3.06 GB, `--config /dev/zero` read without a cap and a FIFO hung. Every
/// size is checked against its bound first, and a config is a bounded regular file.
// Runs under `sh` with `ulimit -v`, with /dev/zero and a FIFO: Unix.
#[cfg(unix)]
#[test]
fn absurd_depths_and_configs_that_are_not_files_are_refused_before_allocating() {
    let dir = k3_tests::scratch_dir("synth-bounds");
    let out = dir.join("o");
    let o = out.to_str().unwrap();
    for layers in ["1000000000", "100000", "0"] {
        assert_input_error(&k3_limited(&["synth", "--out", o, "--layers", layers, "--dry-run"]), "1 to 1024");
    }
    let config = dir.join("deep.json");
    std::fs::write(&config, br#"{"num_hidden_layers": 1000000000}"#).unwrap();
    let c = config.to_str().unwrap();
    assert_input_error(&k3_limited(&["synth", "--out", o, "--config", c, "--dry-run"]), "num_hidden_layers");
    assert_input_error(&k3_limited(&["synth", "--out", o, "--config", "/dev/zero", "--dry-run"]), "not a regular file");
    let fifo = dir.join("config.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let f = fifo.to_str().unwrap();
    assert_input_error(&k3_limited(&["synth", "--out", o, "--config", f, "--dry-run"]), "not a regular file");
    assert!(!out.exists(), "nothing was written");
}
