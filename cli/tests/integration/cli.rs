//! The `k3` command's contract, driven as a real process: JSON fields, logit dumps, and
//! exit statuses (2 for unusable input with a one-line message, 0 on success).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) fn k3(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_k3")).args(args).output().expect("spawn k3")
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

pub(crate) fn golden(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name).join("golden/golden.json")).unwrap()).unwrap()
}

pub(crate) fn csv(v: &Value) -> String {
    v.as_array().unwrap().iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

pub(crate) fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "k3 failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

pub(crate) fn tmp(name: &str) -> PathBuf {
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
pub(crate) fn assert_input_error(args: &[&str], needle: &str) {
    let out = k3(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected, got: {err}");
    assert!(err.contains(needle), "stderr `{err}` should mention `{needle}`");
}

/// Probe finding: one budget given alone silently left the other unlimited; it is said.
#[test]
fn one_budget_alone_says_what_the_other_leaves_unlimited() {
    let model = fixture("tiny-mxfp4");
    let m = model.to_str().unwrap();
    let out = k3(&["run", "--model", m, "--ids", "1", "--gen", "1", "--cache-budget", "60KB"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("note: no --trunk-budget: every trunk layer stays in RAM"), "{err}");
    let out = k3(&["run", "--model", m, "--ids", "1", "--gen", "1", "--trunk-budget", "1GB"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("note: no --cache-budget: the expert cache may hold every routed expert"), "{err}");
    let both =
        k3(&["run", "--model", m, "--ids", "1", "--gen", "1", "--trunk-budget", "1GB", "--cache-budget", "60KB"]);
    assert!(!String::from_utf8_lossy(&both.stderr).contains("note: no --"), "both given: nothing to say");
}

#[test]
fn unusable_input_exits_2_with_a_named_one_line_message() {
    let model = fixture("tiny-mxfp4");
    let m = model.to_str().unwrap();
    assert_input_error(&["run", "--model", "/nonexistent/k3", "--ids", "1", "--gen", "1"], "/nonexistent/k3");
    assert_input_error(&["run", "--model", m, "--ids", "1,x,3", "--gen", "1"], "--ids");
    assert_input_error(&["run", "--model", m, "--ids", "1,99999", "--gen", "1"], "99999");
    assert_input_error(&["run", "--model", m, "--ids", "1"], "--gen");
    assert_input_error(&["run", "--model", m, "--ids", "1", "--gen", "1", "--temperature=-1"], "temperature");
    assert_input_error(
        &["run", "--model", m, "--ids", "1", "--gen", "1", "--temperature", "1", "--top-p", "1.5"],
        "top-p",
    );
    assert_input_error(&["run", "--model", m, "--ids", "1", "--gen", "1", "--threads", "0"], "threads");
    assert_input_error(&["run", "--model", m, "--prompt-file", "/nonexistent/prompt.txt", "--gen", "1"], "prompt.txt");
    assert_input_error(&["tokenize", "--model", "/nonexistent/tok", "--text", "x"], "/nonexistent/tok");
    assert_input_error(&["detokenize", "--model", m, "--ids", "1,99999"], "99999");
    assert_input_error(&["score", "--model", m, "--ids", ""], "--ids");
    assert_input_error(&["frobnicate"], "frobnicate");
    // A folder that is not a model: the message names the missing config.json.
    let empty = tmp("empty-model");
    std::fs::create_dir_all(&empty).unwrap();
    assert_input_error(&["score", "--model", empty.to_str().unwrap(), "--ids", "1"], "config.json");
    std::fs::remove_dir_all(empty).ok();
}

#[test]
fn tokenize_needs_only_the_tokenizer_files_and_matches_the_golden_ids() {
    let golden: Value = serde_json::from_slice(&std::fs::read(fixture("tokenizer/golden_tiny.json")).unwrap()).unwrap();
    let corpus: Value = serde_json::from_slice(&std::fs::read(fixture("tokenizer/corpus.json")).unwrap()).unwrap();
    // A folder with only the two tokenizer files: no config.json, no weights.
    let dir = tmp("tok-only");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["tiktoken.model", "tokenizer_config.json"] {
        std::fs::copy(fixture("tiny-mxfp4").join(f), dir.join(f)).unwrap();
    }
    for case in corpus["cases"].as_array().unwrap().iter().take(12) {
        let (name, text) = (case["name"].as_str().unwrap(), case["text"].as_str().unwrap());
        let file = dir.join("text.txt");
        std::fs::write(&file, text).unwrap();
        let v = stdout_json(&k3(&[
            "tokenize",
            "--model",
            dir.to_str().unwrap(),
            "--text-file",
            file.to_str().unwrap(),
            "--json",
        ]));
        assert_eq!(v["ids"], golden["ids"][name], "{name}");
        let ids = csv(&v["ids"]);
        if ids.is_empty() {
            continue;
        }
        let back = stdout_json(&k3(&["detokenize", "--model", dir.to_str().unwrap(), "--ids", &ids, "--json"]));
        assert_eq!(back["text"], Value::from(text), "{name}: round trip");
    }
    let v = stdout_json(&k3(&["tokenize", "--model", dir.to_str().unwrap(), "--text", "a<|sep|>b", "--json"]));
    assert_eq!(v["ids"][1], Value::from(516), "added-token strings become their ids");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn run_accepts_a_text_prompt() {
    let model = fixture("tiny-f32");
    let prompt = "The capital of France is";
    let tok = stdout_json(&k3(&["tokenize", "--model", model.to_str().unwrap(), "--text", prompt, "--json"]));
    let out =
        stdout_json(&k3(&["run", "--model", model.to_str().unwrap(), "--prompt", prompt, "--gen", "3", "--json"]));
    assert_eq!(out["prompt_ids"], tok["ids"], "the prompt is exactly the tokenised text (no BOS, no template)");
    assert_eq!(out["generated_ids"].as_array().unwrap().len(), 3);
    assert!(out["text"].is_string());
}

#[test]
fn chat_is_driven_through_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let model = fixture("k3-demo");
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "5", "--system", "Be brief."])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let script = "Hello!\nAnd again?\n/system Answer in French.\nBonjour\n/reset\n/nonsense\n/quit\nnever read\n";
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stats: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[') && l.contains("tokens ·")).collect();
    assert_eq!(stats.len(), 3, "one stats line per reply:\n{stdout}");
    assert!(stats[0].contains("(full history)") || stats[0].contains("prefilled"), "{}", stats[0]);
    assert!(!stats[1].contains("full history"), "turn 2 reuses turn 1: {}", stats[1]);
    assert!(stats[2].contains("full history"), "a new system prompt starts over: {}", stats[2]);
    assert!(stdout.contains("(system prompt set; conversation cleared)"));
    assert!(stdout.contains("(conversation cleared)"));
    assert!(stdout.contains("(unknown command /nonsense; try /help)"));
}

// Sends SIGINT with `kill`: Unix signals.

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_reply_in_progress_not_the_program() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    let model = fixture("tiny-f32");
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "30000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let mut stdout = child.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"Tell me a very long story.\n").unwrap();
    stdin.flush().unwrap();
    let text = |seen: &Arc<Mutex<Vec<u8>>>| String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    while text(&seen).is_empty() {
        assert!(Instant::now() < deadline, "the reply never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // tiny-f32's greedy reply here ends itself after 314 tokens, ~0.3 s at 0.001 s/token:
    // the interrupt goes soon after the first output (at 200 ms it once came too late under
    // the parallel tests' load, the reply already over).
    std::thread::sleep(Duration::from_millis(20));
    let sent = Instant::now();
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    while !text(&seen).contains("cancelled") {
        assert!(Instant::now() < deadline, "Ctrl-C did not stop the reply: {}", text(&seen));
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!("reply stopped {:?} after SIGINT", sent.elapsed());
    // The program is still there: it takes the next commands, then quits.
    stdin.write_all(b"/reset\n/quit\n").unwrap();
    drop(stdin);
    let exit = child.wait().unwrap();
    reader.join().unwrap();
    let out = text(&seen);
    assert!(exit.success(), "{out}");
    assert!(out.contains("(conversation cleared)"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with('[') && l.contains("tokens ·")).count(), 1, "{out}");
}

#[test]
fn chat_replans_between_turns_and_keeps_the_conversation() {
    use std::io::Write;
    use std::process::Stdio;
    let model = fixture("k3-demo");
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "4"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let script = "Hello!\n/budget 1GB 80KB\nAnd again?\n/preset nonsense\n/budget 1GB 1B\n/budget 300KB 40KB\n\
                  /preset laptop\nOnce more\n/quit\n";
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let plans: Vec<&str> = stdout.lines().filter(|l| l.contains("the conversation continues")).collect();
    assert_eq!(plans.len(), 2, "two replans took effect:\n{stdout}");
    assert!(plans[0].contains("expert slots") && plans[0].contains("the conversation continues"), "{}", plans[0]);
    let stats: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[') && l.contains("tokens ·")).collect();
    assert_eq!(stats.len(), 3, "{stdout}");
    assert!(
        !stats[1].contains("full history") && !stats[2].contains("full history"),
        "replans keep the state: {stats:?}"
    );
    assert!(stdout.contains("(/preset: unknown preset `nonsense`"), "{stdout}");
    assert!(stdout.contains("cache budget 1 B holds fewer than"), "a refused budget says why:\n{stdout}");
    assert!(stdout.contains("smaller than the whole trunk"), "without --trunk the trunk must fit:\n{stdout}");
}

#[test]
fn issue_13_a_closed_stdout_ends_quietly_and_dumps_never_replace_what_is_not_a_file() {
    use std::process::Stdio;
    let model = fixture("tiny-mxfp4");
    let m = model.to_str().unwrap();
    // The reader goes away at once: the command stops without a panic.
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["run", "--model", m, "--ids", "156,400", "--gen", "400"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    // A dump to a character device or through a symlink is written in place (Unix's
    // device nodes and links).
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let run =
            |dump: &str| k3(&["run", "--model", m, "--ids", "156,400", "--gen", "2", "--json", "--dump-logits", dump]);
        assert!(run("/dev/null").status.success());
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "/dev/null is still a device");
        let dir = k3_tests::scratch_dir("cli-dump-link");
        let (target, link) = (dir.join("target.bin"), dir.join("link.bin"));
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(run(link.to_str().unwrap()).status.success());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the symlink stays a symlink");
        assert_eq!(std::fs::metadata(&target).unwrap().len(), 2 * 768 * 4, "two rows of logits landed in the target");
    }
}

#[test]
fn issue_13_unbounded_inputs_are_refused_before_they_run() {
    let model = fixture("tiny-mxfp4");
    let m = model.to_str().unwrap();
    // Unix's endless device; Windows has no such file.
    #[cfg(unix)]
    assert_input_error(&["run", "--model", m, "--prompt-file", "/dev/zero", "--gen", "1"], "not a regular file");
    assert_input_error(&["run", "--model", m, "--ids", "1", "--gen", "1", "--threads", "1000000"], "threads");
    assert_input_error(
        &["bench", "stream", "--model", m, "--cache-budget", "60KB", "--tokens", "18446744073709551615"],
        "--tokens",
    );
    assert_input_error(
        &["plan", "--model", m, "--preset", "laptop", "--context-length", "18446744073709551615"],
        "context-length",
    );
}

#[test]
fn issue_13_one_bad_chat_line_ends_that_turn_not_the_session() {
    use std::io::Write;
    use std::process::Stdio;
    let model = fixture("tiny-mxfp4");
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "3", "--context-length", "96"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut script = Vec::new();
    script.extend_from_slice(format!("{}\n", "word ".repeat(400)).as_bytes());
    script.extend_from_slice(b"caf\xe9 is not UTF-8\n");
    script.extend_from_slice(b"Hello!\n/quit\n");
    child.stdin.take().unwrap().write_all(&script).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("(that message failed:") && stdout.contains("context length of 96"), "{stdout}");
    assert!(stdout.contains("(that line is not UTF-8; it was not sent)"), "{stdout}");
    let stats: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[') && l.contains("tokens ·")).collect();
    assert_eq!(stats.len(), 1, "the good message is answered after the bad ones:\n{stdout}");
}

/// Issue 38: a conversation that nears its context limit says so before it is full.
#[test]
fn chat_warns_when_a_conversation_nears_its_context_limit() {
    use std::io::Write;
    use std::process::Stdio;
    let model = fixture("k3-demo");
    let chat = |context: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
            .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "12", "--context-length", context])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"Tell me about Mr. Darcy.\n/quit\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The turn holds 55 positions (43 of prompt, 12 of reply): 91 % of 60, 55 % of 100.
    let near = chat("60");
    assert!(near.contains("this conversation holds 55 of its 60 positions (91 %)"), "{near}");
    let roomy = chat("100");
    assert!(!roomy.contains("this conversation holds"), "{roomy}");
}

#[test]
fn issue_13_plan_refuses_a_checkpoint_that_run_refuses() {
    let dir = k3_tests::copy_checkpoint("tiny-mxfp4", "cli-plan-refuses");
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut cfg: Value = serde_json::from_str(&text).unwrap();
    assert!(k3_tests::set_json_key(&mut cfg, "intermediate_size", &16_777_216.into()));
    std::fs::write(&path, cfg.to_string()).unwrap();
    let m = dir.to_str().unwrap();
    let run = k3(&["run", "--model", m, "--ids", "1", "--gen", "1"]);
    let plan = k3(&["plan", "--model", m, "--preset", "laptop"]);
    assert_eq!(run.status.code(), Some(2), "run refuses it");
    assert_eq!(plan.status.code(), Some(2), "so does plan: {}", String::from_utf8_lossy(&plan.stdout));
}

#[test]
fn doctor_json_names_the_machine_and_the_folders_drive() {
    let dir = k3_tests::scratch_dir("doctor");
    let out = stdout_json(&k3(&["doctor", "--json", "--path", dir.to_str().unwrap()]));
    let keys: Vec<&str> = out.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 7, "{keys:?}");
    for key in
        ["cpu", "memory", "drives", "verdicts", "recommended_preset", "recommended_context", "kv_bytes_per_position"]
    {
        assert!(out.get(key).is_some(), "{key} missing: {out}");
    }
    assert_eq!(out["kv_bytes_per_position"], 55_296, "the released K3's latent cache: {out}");
    // A recommended preset comes with the context it keeps here; none without one.
    assert_eq!(out["recommended_preset"].is_null(), out["recommended_context"].is_null(), "{out}");
    assert!(out["cpu"]["logical_cores"].as_u64() >= Some(1), "{out}");
    assert!(out["memory"]["total_bytes"].as_u64() >= out["memory"]["available_bytes"].as_u64(), "{out}");
    // Compressed memory is a count of bytes where the system says (zswap's pool on a Linux
    // kernel that shows it, the macOS compressor) and null where it does not (Windows).
    let compressed = &out["memory"]["compressed_bytes"];
    let says = cfg!(target_os = "macos")
        || (cfg!(target_os = "linux")
            && std::fs::read_to_string("/proc/meminfo").unwrap().lines().any(|l| l.starts_with("Zswap:")));
    assert_eq!(compressed.is_u64(), says, "{out}");
    assert_eq!(compressed.is_null(), !says, "{out}");
    let drives = out["drives"].as_array().unwrap();
    assert_eq!(drives.len(), 1, "one folder, one drive: {out}");
    let d = &drives[0];
    assert_eq!(d["paths"][0].as_str(), dir.to_str(), "{d}");
    let (total, free) = (d["total_bytes"].as_u64().unwrap(), d["free_bytes"].as_u64().unwrap());
    assert!(total >= free && free > 0, "{d}");
    assert!(!d["fs_type"].as_str().unwrap().is_empty(), "{d}");
    // How a download writes there, tried with a probe file the doctor removes again.
    let writes = d["writes"].as_str().unwrap_or_else(|| panic!("writes: {d}"));
    let bypassing_fs = ["ext4", "xfs", "btrfs"].contains(&d["fs_type"].as_str().unwrap());
    if cfg!(target_os = "linux") && bypassing_fs {
        assert_eq!(writes, "O_DIRECT", "{d}");
    } else {
        assert!(writes == "O_DIRECT" || writes.starts_with("buffered ("), "{d}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe file is removed");
    let verdicts = out["verdicts"].as_array().unwrap();
    let item = format!("drive {}", d["mount_point"].as_str().unwrap());
    assert!(verdicts.iter().any(|v| v["item"] == item.as_str()), "a verdict for the drive: {out}");
    assert!(verdicts.iter().all(|v| ["green", "amber", "red"].contains(&v["level"].as_str().unwrap())), "{out}");
    assert_input_error(&["doctor", "--path", dir.join("missing").to_str().unwrap()], "missing");
    assert_input_error(&["doctor", "--path", &format!("/{}", "x".repeat(5000))], "doctor"); // probe: exited 1
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plan_without_a_folder_refuses_unusable_footprint_and_machine_flags() {
    let bad = k3_tests::scratch_dir("cli-plan-footprint").join("bad.json");
    std::fs::write(&bad, r#"{"expert_bytes": 1}"#).unwrap();
    let b = bad.to_str().unwrap();
    assert_input_error(&["plan", "--preset", "laptop"], "--model");
    assert_input_error(&["plan", "--footprint", "/nonexistent/fp.json", "--preset", "laptop"], "/nonexistent/fp.json");
    assert_input_error(&["plan", "--footprint", b, "--preset", "laptop"], "not a footprint");
    assert_input_error(&["plan", "--released", "--preset", "auto", "--mem-total", "64GB"], "--mem-available");
    assert_input_error(
        &["plan", "--released", "--preset", "auto", "--mem-total", "x", "--mem-available", "1GB"],
        "--mem-total",
    );
    assert_input_error(&["plan", "--released", "--trunk", "/tmp", "--preset", "laptop"], "--trunk needs --model");
    // Given figures replace this machine's: auto is sized from them, and the plan says whether it fits.
    let out = k3(&[
        "plan",
        "--released",
        "--streamed-trunk",
        "--preset",
        "auto",
        "--mem-total",
        "64GB",
        "--mem-available",
        "48GB",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["mem_available_bytes"].as_u64(), v["fits"].as_bool()), (Some(48_000_000_000), Some(true)), "{v}");
}

#[test]
fn plan_by_cost_prints_each_layers_residency_and_both_forecasts() {
    let out = stdout_json(&k3(&[
        "plan",
        "--released",
        "--streamed-trunk",
        "--trunk-budget",
        "40GB",
        "--cache-budget",
        "4GB",
        "--residency",
        "cost",
        "--residency-disk-gbps",
        "2",
        "--json",
    ]));
    let residency = out["residency"].as_array().unwrap();
    assert_eq!(residency.len(), 93, "{out}");
    assert!(residency.iter().all(|r| ["pinned", "held coded", "streamed"].contains(&r.as_str().unwrap())));
    assert_eq!(residency[0], "pinned", "the 2.34 GB layer 0 is pinned so the ring fits a 1.27 GB layer: {out}");
    let (chosen, prefix) = (&out["cost"]["chosen"], &out["cost"]["prefix"]);
    let s = |v: &Value| v["seconds_per_token"].as_f64().unwrap();
    assert!(s(chosen) > 0.0 && s(chosen) <= s(prefix), "{out}");
    let base = ["plan", "--released", "--streamed-trunk", "--preset", "laptop", "--residency"];
    assert_input_error(&[&base[..], &["fastest"]].concat(), "--residency fastest");
    assert_input_error(&[&base[..], &["cost"]].concat(), "--residency-disk-gbps");
}

/// Probe finding: a long command's progress went to a log as one endless line of carriage
/// returns; off a terminal it is one line per step.
#[test]
fn pack_writes_one_progress_line_per_step_when_stderr_is_not_a_terminal() {
    let model = fixture("tiny-mxfp4");
    let trunk = tmp("pack-progress-trunk");
    let packed = k3(&["pack", "--model", model.to_str().unwrap(), "--out", trunk.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&packed.stderr);
    assert!(packed.status.success(), "{err}");
    assert!(!err.contains('\r'), "a carriage return in a piped log: {err:?}");
    let steps: Vec<&str> = err.lines().filter(|l| l.starts_with("packing layer ")).collect();
    let layers = 13;
    assert_eq!(steps.len(), layers, "one line per layer: {err}");
    assert!(
        steps.iter().enumerate().all(|(i, l)| l.starts_with(&format!("packing layer {}/{layers} · ", i + 1))),
        "{err}"
    );
}

/// Probe finding: a coded trunk's staging was in `k3 plan`'s total and on no line above it.
/// The trunk line names its total and the staging, and the JSON has both.
#[test]
fn plan_names_a_coded_trunks_staging_beside_its_total() {
    let model = fixture("tiny-bf16-nonorm");
    let trunk = tmp("plan-staging-trunk");
    let m = model.to_str().unwrap();
    let packed = k3(&["pack", "--model", m, "--out", trunk.to_str().unwrap(), "--codec", "huffman"]);
    assert!(packed.status.success(), "{}", String::from_utf8_lossy(&packed.stderr));
    let args =
        ["plan", "--model", m, "--trunk", trunk.to_str().unwrap(), "--trunk-budget", "400KB", "--cache-budget", "1MB"];
    let v = stdout_json(&k3(&[&args[..], &["--json"]].concat()));
    let staging = v["staging_bytes"].as_u64().expect("staging_bytes in the JSON");
    assert!(staging > 0, "streamed coded layers need staging: {v}");
    let parts = ["pinned_bytes", "pinned_coded_bytes", "piece_eager_bytes"].map(|k| v[k].as_u64().unwrap());
    let ring = v["ring_slots"].as_u64().unwrap() * v["ring_slot_bytes"].as_u64().unwrap();
    assert_eq!(parts.iter().sum::<u64>() + ring + staging, v["trunk_bytes"].as_u64().unwrap(), "{v}");
    let text = String::from_utf8(k3(&args).stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("trunk: ")).expect("a trunk line");
    assert!(line.contains(" — ") && line.contains("staging for coded reads"), "{line}");
}
