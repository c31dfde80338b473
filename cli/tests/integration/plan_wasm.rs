//! Parity (issue 16): the planner compiled to WebAssembly and run under Node
//! (`plan_wasm.mjs` on `ui/public/k3_plan.wasm`, built by scripts/build-wasm.sh) answers
//! exactly what `k3 plan --json` answers — every field of every plan, and every refusal's
//! kind, numbers and message — for every preset on three machines, a grid of custom
//! budgets, other context lengths and I/O thread counts, on the released K3 footprint
//! (streamed and resident) and on a synthetic one (tiny-mxfp4, from its folder and from
//! its printed footprint). Its forecasts (given rates) equal the native build's of the same
//! calls. The module and Node are skipped with a message outside CI and required in CI.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const GB: u64 = 1_000_000_000;
const PRESETS: [&str; 6] = ["laptop", "desktop", "workstation", "server", "max", "auto"];
/// (MemTotal, MemAvailable): too small for `auto` on K3, a 64 GB desktop, a large server.
const MACHINES: [(u64, u64); 3] = [(8 * GB, 5 * GB), (64 * GB, 48 * GB), (2000 * GB, 1900 * GB)];

fn k3(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_k3")).args(args).output().expect("spawn k3")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Skips with a message outside CI; fails in CI, where `npm run build` made the module.
fn require(what: &str, present: bool) -> bool {
    if !present {
        assert!(std::env::var_os("CI").is_none(), "{what} is missing in CI (scripts/test.sh builds it first)");
        eprintln!("skipping: {what} is not available");
    }
    present
}

/// The built module (`K3_PLAN_WASM` names another), when it and Node are there.
fn module() -> Option<PathBuf> {
    let path = std::env::var_os("K3_PLAN_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("ui/public/k3_plan.wasm"));
    let node = Command::new("node").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    (require("node", node) && require(&format!("{} (bash scripts/build-wasm.sh)", path.display()), path.exists()))
        .then_some(path)
}

/// Each call's answer from the wasm module under Node, parsed exactly (u64 stay u64).
fn wasm(module: &Path, calls: &[Value]) -> Vec<Value> {
    let mut child = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plan_wasm.mjs"))
        .arg(module)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn node");
    let mut stdin = child.stdin.take().expect("stdin");
    for call in calls {
        writeln!(stdin, "{call}").expect("write a call");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("node runs");
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("answer {l}: {e}")))
        .collect();
    assert_eq!(answers.len(), calls.len(), "one answer per call");
    answers
}

/// `k3 plan … --json` as the wasm module answers: `{"plan": …}`, or the `{"error": …}` it
/// prints with exit status 2 when the planner refuses.
fn cli(args: &[String]) -> Value {
    let out = k3(args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("k3 {args:?}: stdout is not JSON ({e}): {stdout} / {}", String::from_utf8_lossy(&out.stderr))
    });
    if out.status.success() {
        json!({ "plan": v })
    } else {
        assert_eq!(out.status.code(), Some(2), "a refusal is an input error: {args:?}");
        assert!(v["error"]["kind"].is_string(), "k3 {args:?} failed without a planner error: {v}");
        v
    }
}

/// A footprint as both sides take it: the flags that give it to `k3 plan`, and the JSON the
/// page sends.
struct Subject {
    name: &'static str,
    flags: Vec<String>,
    footprint: Value,
    streamed: bool,
}

/// One request, as flags and as the module's input.
struct Case {
    flags: Vec<String>,
    input: Value,
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

fn case(subject: &Subject, machine: (u64, u64), choice: Value, context_length: u64, io_threads: u64) -> Case {
    let mut flags: Vec<String> = vec![s("plan"), s("--json")];
    flags.extend(subject.flags.iter().cloned());
    match &choice {
        Value::String(name) => flags.extend([s("--preset"), name.clone()]),
        custom => flags.extend([
            s("--trunk-budget"),
            s(&custom["trunk_bytes"]),
            s("--cache-budget"),
            s(&custom["cache_bytes"]),
        ]),
    }
    flags.extend([s("--mem-total"), s(machine.0), s("--mem-available"), s(machine.1)]);
    flags.extend([s("--context-length"), s(context_length), s("--io-threads"), s(io_threads)]);
    let input = json!({
        "footprint": subject.footprint,
        "machine": { "total_bytes": machine.0, "available_bytes": machine.1 },
        "choice": choice,
        "streamed_trunk": subject.streamed,
        "context_length": context_length,
        "io_threads": io_threads,
    });
    Case { flags, input }
}

/// Every preset on every machine, a grid of budgets scaled to the footprint (from nothing
/// to more than the whole model), and presets at other context lengths and thread counts.
fn cases(subject: &Subject) -> Vec<Case> {
    let fp = &subject.footprint;
    let trunk: u64 = fp["layer_trunk_bytes"].as_array().expect("layers").iter().filter_map(Value::as_u64).sum();
    let experts = fp["n_experts_total"].as_u64().expect("n_experts_total") * fp["expert_bytes"].as_u64().expect("e");
    let mut out = Vec::new();
    for machine in MACHINES {
        for preset in PRESETS {
            out.push(case(subject, machine, json!(preset), 4096, 4));
        }
    }
    for t in [0.0, 0.005, 0.02, 0.1, 0.3, 0.5, 0.9, 0.999, 1.0, 1.3] {
        for c in [0.0, 0.002, 0.01, 0.1, 0.5, 1.5] {
            let budget =
                json!({ "trunk_bytes": (trunk as f64 * t) as u64, "cache_bytes": (experts as f64 * c) as u64 });
            out.push(case(subject, MACHINES[1], budget, 4096, 4));
        }
    }
    for (context_length, io_threads) in [(1, 1), (1 << 20, 16), ((1 << 20) + 1, 4), (4096, 0)] {
        for preset in ["laptop", "auto"] {
            out.push(case(subject, MACHINES[2], json!(preset), context_length, io_threads));
        }
    }
    out
}

/// Runs every case on both sides and requires identical answers; returns how many were
/// plans and which refusals came up, so a caller can require both kinds were exercised.
fn check_parity(module: &Path, subject: &Subject) -> (usize, Vec<String>) {
    let cases = cases(subject);
    let calls: Vec<Value> = cases.iter().map(|c| json!({ "call": "plan", "input": c.input })).collect();
    let answers = wasm(module, &calls);
    let (mut plans, mut kinds) = (0, Vec::new());
    for (case, from_wasm) in cases.iter().zip(&answers) {
        let from_cli = cli(&case.flags);
        assert_eq!(from_wasm, &from_cli, "{}: k3 {}", subject.name, case.flags.join(" "));
        match from_cli["error"]["kind"].as_str() {
            Some(kind) if !kinds.iter().any(|k| k == kind) => kinds.push(kind.to_string()),
            Some(_) => {}
            None => plans += 1,
        }
    }
    eprintln!("{}: {} cases identical ({plans} plans, refusals {kinds:?})", subject.name, cases.len());
    (plans, kinds)
}

fn released(module: &Path) -> Value {
    let from_wasm = wasm(module, &[json!({ "call": "released_footprint" })]).remove(0);
    let printed = k3(&[s("plan"), s("--released"), s("--print-footprint")]);
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    let from_cli: Value = serde_json::from_slice(&printed.stdout).expect("footprint JSON");
    assert_eq!(from_wasm, from_cli, "the released footprint, computed in wasm and natively");
    assert_eq!(from_cli["layer_trunk_bytes"].as_array().map(Vec::len), Some(93));
    from_cli
}

#[test]
#[cfg_attr(windows, ignore = "runs the wasm planner in Node.js, a Linux program under Wine")]
fn the_wasm_planner_plans_the_released_model_as_k3_plan_does() {
    let Some(module) = module() else { return };
    let footprint = released(&module);
    let streamed = Subject {
        name: "released, streamed",
        flags: vec![s("--released"), s("--streamed-trunk")],
        footprint: footprint.clone(),
        streamed: true,
    };
    let (plans, kinds) = check_parity(&module, &streamed);
    assert!(plans >= 40, "{plans} plans");
    for kind in ["TrunkBudgetTooSmall", "CacheBudgetTooSmall", "AutoTooSmall", "ContextLength", "IoThreads"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} among {kinds:?}");
    }
    let resident = Subject { name: "released, resident", flags: vec![s("--released")], footprint, streamed: false };
    let (plans, kinds) = check_parity(&module, &resident);
    assert!(plans >= 10 && kinds.iter().any(|k| k == "TrunkNotPacked"), "{plans} plans, {kinds:?}");
}

#[test]
#[cfg_attr(windows, ignore = "runs the wasm planner in Node.js, a Linux program under Wine")]
fn the_wasm_planner_plans_a_synthetic_checkpoint_as_k3_plan_does() {
    let Some(module) = module() else { return };
    let dir = repo_root().join("fixtures/tiny-mxfp4");
    let model = vec![s("--model"), dir.display().to_string()];
    let printed = k3(&[vec![s("plan"), s("--print-footprint")], model.clone()].concat());
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    let footprint: Value = serde_json::from_slice(&printed.stdout).expect("footprint JSON");
    let from_folder =
        Subject { name: "tiny-mxfp4 folder", flags: model, footprint: footprint.clone(), streamed: false };
    let (plans, kinds) = check_parity(&module, &from_folder);
    assert!(plans >= 10 && kinds.iter().any(|k| k == "TrunkNotPacked"), "{plans} plans, {kinds:?}");

    let file = k3_tests::scratch_dir("plan-wasm").join("footprint.json");
    std::fs::write(&file, footprint.to_string()).expect("write the footprint");
    let from_file = Subject {
        name: "tiny-mxfp4 footprint, streamed",
        flags: vec![s("--footprint"), file.display().to_string(), s("--streamed-trunk")],
        footprint,
        streamed: true,
    };
    let (plans, kinds) = check_parity(&module, &from_file);
    assert!(plans >= 20, "{plans} plans");
    assert!(kinds.iter().any(|k| k == "TrunkBudgetTooSmall") && kinds.iter().any(|k| k == "CacheBudgetTooSmall"));
}

/// The forecast has no CLI twin that takes given rates (`k3 forecast` measures this CPU), so
/// the wasm module's forecasts are held to the same crate's answers built natively.
#[test]
#[cfg_attr(windows, ignore = "runs the wasm planner in Node.js, a Linux program under Wine")]
fn the_wasm_planner_forecasts_every_preset_as_the_native_build_does() {
    let Some(module) = module() else { return };
    let footprint = released(&module);
    let mut calls = Vec::new();
    for (disk, bf16, expert) in [(0.5e9, 10e9, 5e9), (3.2e9, 40e9, 20e9), (7e9, 200e9, 90e9)] {
        for (machine, streamed) in [(MACHINES[1], true), (MACHINES[2], true), (MACHINES[2], false)] {
            calls.push(json!({ "call": "presets", "input": {
                "footprint": footprint,
                "machine": { "total_bytes": machine.0, "available_bytes": machine.1 },
                "custom": { "trunk_bytes": 20 * GB, "cache_bytes": 7 * GB },
                "streamed_trunk": streamed, "context_length": 4096, "io_threads": 4,
                "rates": { "disk_trunk_bytes_per_second": disk, "disk_expert_bytes_per_second": disk * 0.6,
                    "bf16_bytes_per_second": bf16, "expert_bytes_per_second": expert },
            }}));
        }
    }
    let answers = wasm(&module, &calls);
    let mut forecasts = 0;
    for (call, from_wasm) in calls.iter().zip(&answers) {
        let native: Value =
            serde_json::from_str(&k3_plan_wasm::api::presets_call(call["input"].to_string().as_bytes())).expect("JSON");
        assert_eq!(from_wasm, &native, "{}", call["input"]["rates"]);
        let rows = native["presets"].as_array().expect("presets");
        forecasts += rows.iter().filter(|r| r["forecast"]["seconds_per_token"]["low"].as_f64().is_some()).count();
    }
    assert!(forecasts >= 40, "{forecasts} forecasts compared");
}
