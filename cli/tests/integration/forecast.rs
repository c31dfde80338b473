//! `k3 forecast` as a real process: every preset is listed with the released footprint's
//! plan, the figures add up, a checkpoint folder is forecast from its headers, and bad
//! flags are refused with exit status 2 and one line. Also `k3 plan`'s batch line: what each
//! conversation at once costs and the largest batch a machine keeps.

use std::process::{Command, Output};

use serde_json::Value;

fn k3(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_k3")).args(args).output().expect("spawn k3")
}

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "k3 failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

fn preset<'a>(v: &'a Value, name: &str) -> &'a Value {
    let presets = v["presets"].as_array().expect("presets");
    presets.iter().find(|p| p["preset"] == name).unwrap_or_else(|| panic!("no {name} in {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

/// The time model's identities hold for one preset entry.
fn check_arithmetic(p: &Value, gbps: f64) {
    let bytes = &p["bytes_per_token"];
    let io = (f(&bytes["trunk"]) + f(&bytes["experts"])) / (gbps * 1e9);
    assert!((f(&p["io_seconds"]) - io).abs() < 1e-9 * io.max(1.0), "{p}");
    let (compute, s) = (f(&p["compute_seconds"]), &p["seconds_per_token"]);
    assert!((f(&s["expected_serial"]) - (io + compute)).abs() < 1e-9 * (io + compute), "{p}");
    assert!((f(&s["expected_overlapped"]) - io.max(compute)).abs() < 1e-9 * (io + compute), "{p}");
    assert!(f(&s["low"]) <= f(&s["expected_overlapped"]) && f(&s["expected_serial"]) <= f(&s["high"]), "{p}");
}

#[test]
fn without_a_model_every_preset_is_forecast_for_the_released_footprint() {
    let v = stdout_json(&k3(&["forecast", "--json", "--disk-gbps", "2.0"]));
    let names: Vec<&str> = v["presets"].as_array().unwrap().iter().map(|p| p["preset"].as_str().unwrap()).collect();
    assert_eq!(names, ["ultra", "laptop", "desktop", "workstation", "server", "max", "auto"]);
    assert_eq!(v["model"], "released");
    assert_eq!(v["footprint"]["trunk_bytes"], 108_811_877_376u64);
    assert_eq!(v["disk"]["source"], "flag");
    let laptop = preset(&v, "laptop");
    assert_eq!(laptop["plan"]["pinned_layers"], 0);
    assert_eq!(laptop["plan"]["layers"], 93);
    assert_eq!(laptop["plan"]["ring_slots"], 1);
    assert_eq!(laptop["plan"]["expert_slots"], 56);
    // Every trunk layer and the output head (read when used, as the trunk streams).
    assert_eq!(laptop["bytes_per_token"]["trunk"], 108_811_877_376u64 + 2_348_810_240);
    assert_eq!(f(&laptop["bytes_per_token"]["experts"]), 1472.0 * 17_547_264.0, "56 slots keep nothing");
    let workstation = preset(&v, "workstation");
    assert_eq!(workstation["plan"]["pinned_layers"], 48);
    let server = preset(&v, "server");
    assert_eq!(
        (server["plan"]["pinned_layers"].as_u64(), server["bytes_per_token"]["trunk"].as_u64()),
        (Some(93), Some(0))
    );
    let ultra = preset(&v, "ultra");
    assert_eq!((ultra["plan"]["ring_slots"].as_u64(), ultra["plan"]["expert_slots"].as_u64()), (Some(1), Some(17)));
    for name in ["ultra", "laptop", "desktop", "workstation", "server", "max"] {
        let p = preset(&v, name);
        check_arithmetic(p, 2.0);
        // A plan beyond this machine is shown with the planner's shortfall, not dropped.
        let fits = p["plan"]["fits"].as_bool().unwrap();
        assert_eq!(fits, p["plan"]["shortfall"].is_null(), "{p}");
        assert_eq!(fits, p["plan"]["headroom_bytes"].as_i64().unwrap() >= 0, "{p}");
    }
}

#[test]
fn a_checkpoint_folder_and_a_custom_budget_are_forecast() {
    let model = k3_tests::fixture("tiny-mxfp4");
    let out = k3(&[
        "forecast",
        "--model",
        model.to_str().unwrap(),
        "--disk-gbps",
        "1",
        "--trunk-budget",
        "1GB",
        "--cache-budget",
        "1GB",
        "--json",
    ]);
    let v = stdout_json(&out);
    assert_eq!(v["presets"].as_array().unwrap().len(), 8, "seven presets and the custom budget");
    assert_eq!(v["trunk_streamed"], false, "no --trunk: the trunk stays resident");
    let custom = preset(&v, "custom");
    assert_eq!(custom["plan"]["layers"], 13);
    assert_eq!(custom["plan"]["pinned_layers"], 13);
    assert_eq!(custom["bytes_per_token"]["trunk"], 0);
    assert_eq!(custom["budget"]["trunk_bytes"], 1_000_000_000u64);
    check_arithmetic(custom, 1.0);
}

#[test]
fn a_human_table_names_every_preset_and_its_assumptions() {
    let out = k3(&["forecast", "--disk-gbps", "3.2", "--threads", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["laptop", "desktop", "workstation", "server", "max", "auto"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{name} missing from\n{text}");
    }
    assert!(text.contains("3.20 GB/s for trunk and expert reads, given with --disk-gbps"), "{text}");
    assert!(text.contains("with 1 thread(s)"), "{text}");
}

/// Exit status 2 and one line on stderr naming `needle`.
fn refused(args: &[&str], needle: &str) {
    let out = k3(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "stderr `{err}` should mention `{needle}`");
}

#[test]
fn bad_flags_are_refused_with_one_line() {
    refused(&["forecast", "--disk-gbps", "0"], "--disk-gbps");
    refused(&["forecast", "--disk-gbps", "1e-30"], "1 MB/s to 1 TB/s");
    refused(&["forecast", "--disk-gbps", "fast"], "--disk-gbps");
    refused(&["forecast", "--disk-gbps", "1", "--disk", "/tmp"], "--disk");
    refused(&["forecast", "--trunk", "/tmp"], "--model");
    refused(&["forecast", "--disk-gbps", "1", "--trunk-budget", "3XB"], "3XB");
    refused(&["forecast", "--disk-gbps", "1", "--context-length", "0"], "context-length");
    refused(&["forecast", "--disk-gbps", "1", "--model", "/nonexistent-k3"], "--model");
    refused(&["forecast", "--disk-gbps", "1", "--preset", "laptop"], "--preset");
    // Probe finding: 5,000 threads were still measuring at 120 s; bounded as everywhere.
    refused(&["forecast", "--disk-gbps", "1", "--threads", "5000"], "give 1 to 1024");
    refused(&["forecast", "--disk-gbps", "1", "--threads", "0"], "--threads");
}

#[test]
fn plan_shows_what_each_conversation_at_once_costs_and_the_largest_batch() {
    let args = ["plan", "--released", "--streamed-trunk", "--preset", "laptop", "--context-length", "32768"];
    let machine = ["--mem-total", "16GB", "--mem-available", "12GB"];
    let json = stdout_json(&k3(&[&args[..], &machine, &["--json"]].concat()));
    let per_sequence = json["per_sequence_bytes"].as_u64().unwrap();
    assert_eq!(per_sequence, json["state_bytes"].as_u64().unwrap() + 55_296 * 32_768, "{json}");
    let (total, largest) = (json["total_bytes"].as_u64().unwrap(), json["largest_batch"].as_u64().unwrap());
    // The largest batch is the last whose plan fits the 12 GB available.
    assert!(total + (largest - 1) * per_sequence <= 12_000_000_000, "{json}");
    assert!(total + largest * per_sequence > 12_000_000_000, "{json}");
    let text = String::from_utf8(k3(&[&args[..], &machine].concat()).stdout).unwrap();
    assert!(text.contains(&format!("this machine keeps up to {largest} at once")), "{text}");
}
