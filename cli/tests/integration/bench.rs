//! The `k3 bench` commands driven as a real process: `stream` (floors, ratios, two residency
//! rules in one run), `disk` (whole-expert reads, the sweep, the scratch file's bounds and
//! cleanup), `kernels` and `constrain`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::{assert_input_error, fixture, k3, stdout_json, tmp};

#[test]
fn bench_stream_reports_floors_and_ratio() {
    let model = fixture("tiny-mxfp4");
    let out = stdout_json(&k3(&[
        "bench",
        "stream",
        "--model",
        model.to_str().unwrap(),
        "--cache-budget",
        "60KB",
        "--tokens",
        "2",
        "--json",
    ]));
    assert_eq!(out["tokens"], 2);
    for key in [
        "seconds_per_token",
        "io_floor_seconds",
        "compute_floor_seconds",
        "ratio_to_larger_floor",
        "drive_best_gbps",
        "achieved_read_gbps",
    ] {
        assert!(out[key].as_f64().is_some_and(|v| v >= 0.0), "{key}: {out}");
    }
    assert!(out["expert_bytes_per_token"].as_f64().unwrap() > 0.0, "a 60 KB cache streams experts: {out}");
    assert_input_error(&["bench", "stream", "--model", model.to_str().unwrap()], "budget");
}

/// A folder on the build's drive (not a RAM /tmp, which `bench disk` refuses).
fn drive_dir(tag: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("k3-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bench_disk_reads_whole_experts_at_depth_1_and_16_and_removes_its_scratch_file() {
    let dir = drive_dir("bench-experts");
    let out = stdout_json(&k3(&[
        "bench",
        "disk",
        "--path",
        dir.to_str().unwrap(),
        "--scratch-size",
        "64MB",
        "--seconds",
        "1",
        "--json",
    ]));
    assert_eq!(out["block_bytes"], 17_547_264, "{out}");
    assert_eq!(out["direct"], true, "{out}");
    assert_eq!(out["files"].as_array().map(Vec::len), Some(1), "{out}");
    for qd in ["qd1", "qd16"] {
        let p = &out[qd];
        let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{qd}.{k} in {out}"));
        let (mbps, eps, p50, p99) = (f("mb_per_s"), f("experts_per_s"), f("p50_ms"), f("p99_ms"));
        assert!(mbps > 0.0 && 0.0 < p50 && p50 <= p99, "{qd}: {p}");
        let from_experts = eps * 17_547_264.0 / 1e6;
        assert!((from_experts - mbps).abs() <= 0.01 + 1e-5 * mbps, "{qd}: {from_experts} vs {mbps}");
        assert!(f("reads") >= 1.0 && f("seconds") >= 1.0, "{qd}: {p}");
    }
    assert!(out["qd16"]["reads"].as_u64() >= Some(16), "every one of the 16 readers read: {out}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).collect();
    assert!(leftovers.is_empty(), "the scratch file is removed: {leftovers:?}");
    assert_input_error(&["bench", "disk", "--path", dir.to_str().unwrap(), "--seconds", "0"], "--seconds");
    assert_input_error(&["bench", "disk", "--path", dir.to_str().unwrap(), "--save", "x.json"], "--sweep");
    let _ = std::fs::remove_dir(&dir);
}

/// Probe findings: a 10 TB scratch size wrote until the file system was full,
/// `--seconds 1e19` panicked, and SIGTERM or SIGHUP left the 2 GiB scratch file behind.
#[test]
fn bench_disk_refuses_a_scratch_file_the_drive_cannot_hold_bounds_its_seconds_and_cleans_up_on_sigterm() {
    let dir = drive_dir("bench-bounds");
    let d = dir.to_str().unwrap();
    assert_input_error(&["bench", "disk", "--path", d, "--scratch-size", "1000TB", "--seconds", "1"], "1 GiB free");
    assert_input_error(&["bench", "disk", "--path", d, "--seconds", "1e19"], "at most 3600");
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "nothing written for a refused size");
    #[cfg(unix)]
    for signal in ["TERM", "HUP"] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_k3"))
            .args(["bench", "disk", "--path", d, "--scratch-size", "64MB", "--seconds", "30", "--json"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let began = std::time::Instant::now();
        // Signalled once its scratch file exists (written, or being written).
        while std::fs::read_dir(&dir).unwrap().next().is_none() {
            assert!(began.elapsed() < std::time::Duration::from_secs(30), "no scratch file appeared");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let kill = std::process::Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status();
        assert!(kill.unwrap().success());
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "SIG{signal}: the bench stopped with an error");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
        assert!(left.is_empty(), "SIG{signal} left {left:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn bench_disk_sweeps_a_scratch_file_and_its_saved_pattern_drives_the_engine() {
    let dir = k3_tests::scratch_dir("cli-bench-disk");
    let saved = dir.join("pattern.json");
    let out = stdout_json(&k3(&[
        "bench",
        "disk",
        "--sweep",
        "--path",
        dir.to_str().unwrap(),
        "--scratch-size",
        "16MB",
        "--sizes",
        "1,2",
        "--depths",
        "1,2",
        "--bytes-per-point",
        "8MB",
        "--save",
        saved.to_str().unwrap(),
        "--json",
    ]));
    let points = out["points"].as_array().unwrap();
    assert_eq!(points.len(), 8, "2 sizes × 2 depths × random and sequential: {out}");
    assert!(points.iter().all(|p| p["gbps"].as_f64().is_some_and(|g| g > 0.0)), "{out}");
    let best = &out["best"];
    let pattern: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!((&pattern["request_bytes"], &pattern["depth"]), (&best["request_bytes"], &best["depth"]));
    let leftovers: Vec<_> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).filter(|e| e.path() != saved).collect();
    assert!(leftovers.is_empty(), "the scratch file is removed: {leftovers:?}");
    // The saved pattern is what a streamed run reads with; the output does not change.
    let model = fixture("tiny-mxfp4");
    let ids = "156,400,651,463";
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--model",
            model.to_str().unwrap(),
            "--ids",
            ids,
            "--gen",
            "3",
            "--cache-budget",
            "60KB",
            "--json",
        ];
        args.extend_from_slice(extra);
        stdout_json(&k3(&args))["generated_ids"].clone()
    };
    assert_eq!(run(&["--read-pattern", saved.to_str().unwrap()]), run(&[]));
    assert_input_error(
        &["run", "--model", model.to_str().unwrap(), "--ids", ids, "--gen", "1", "--read-size", "1000"],
        "read-size",
    );
}

#[test]
fn bench_kernels_refuses_a_thread_count_it_would_not_start() {
    for bad in ["0", "100000"] {
        let out = k3(&["bench", "kernels", "--threads", bad, "--reps", "1"]);
        assert_eq!(out.status.code(), Some(2), "--threads {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--threads") && err.contains("1024"), "{err}");
    }
}

#[test]
fn bench_stream_compares_two_residency_rules_in_one_run() {
    let model = fixture("tiny-bf16-nonorm");
    let trunk = tmp("versus-residency-trunk");
    let m = model.to_str().unwrap();
    let packed = k3(&["pack", "--model", m, "--out", trunk.to_str().unwrap(), "--codec", "huffman"]);
    assert!(packed.status.success(), "{}", String::from_utf8_lossy(&packed.stderr));
    let t = trunk.to_str().unwrap();
    let args = ["bench", "stream", "--model", m, "--trunk", t, "--trunk-budget", "400KB", "--cache-budget", "1MB"];
    let more =
        ["--tokens", "2", "--versus-residency", "cost", "--residency-disk-gbps", "0.05", "--rounds", "1", "--json"];
    let out = stdout_json(&k3(&[&args[..], &more[..]].concat()));
    assert_eq!(out["first"], "--residency prefix");
    assert_eq!(out["versus"], "--residency cost");
    assert!(out["versus_speedup"].as_f64().is_some_and(|x| x > 0.0), "{out}");
    // One round: its ratio is the median, and the ratio of the two runs.
    let s = |run: &Value| run["seconds_per_token"].as_f64().unwrap();
    let round = s(&out["first_runs"][0]) / s(&out["versus_runs"][0]);
    assert_eq!(out["round_speedups"].as_array().map(Vec::len), Some(1), "{out}");
    assert!(out["median_round_speedup"].as_f64().is_some_and(|m| (m - round).abs() < 1e-12), "{out}");
    let cost_run = &out["versus_runs"][0];
    assert!(cost_run["residency"].as_str().is_some_and(|r| !r.is_empty()), "{cost_run}");
    let busy = cost_run["drive_busy_share"].as_f64().unwrap();
    assert!(
        (0.0..=1.01).contains(&busy),
        "the drive's busy share is a share (its clock and the token's may differ by microseconds): {cost_run}"
    );
    assert!(cost_run["reads_in_flight_while_busy"].as_f64().is_some(), "{cost_run}");
    std::fs::remove_dir_all(trunk).ok();
}

/// Issue 39: `k3 bench constrain` decodes a required call under its mask on the demo
/// model and replays it over K3's released vocabulary; the figures are positive and named.
#[test]
fn bench_constrain_times_masks_at_the_model_and_k3_vocabularies() {
    let model = k3_tests::fixture("k3-demo");
    let Some(released) = k3_tests::released("kimi-tokenizer") else { return };
    let out = k3(&[
        "bench",
        "constrain",
        "--model",
        model.to_str().unwrap(),
        "--k3-vocabulary",
        released.to_str().unwrap(),
        "--rounds",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["vocabulary"]["k3"], 163_588, "the released ranks and four markers: {v}");
    for key in ["model_vocabulary", "k3_vocabulary"] {
        assert!(v["mask_ms"][key].as_f64().is_some_and(|ms| ms > 0.0), "{v}");
    }
    assert!(v["decode_step_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{v}");
}
