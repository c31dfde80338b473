//! `k3 serve` as a real process on 127.0.0.1:0: the first stdout line names the address;
//! greedy chat answers (whole and streamed) carry exactly the token ids `k3 run --greedy`
//! generates for the same rendered prompt; stop strings, max_tokens → `length`, a second
//! request extending the first prefilling only the new part; the official `openai`
//! Python client and curl against it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use k3_engine::chat::{ChatMessage, ChatMode, Role};
use k3_tests::http::{get, post_json, Answer};
use serde_json::{json, Value};

const MODEL: &str = "k3-demo";

fn model_dir() -> PathBuf {
    k3_tests::fixture(MODEL)
}

/// A `k3 serve` child, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    /// Ctrl-C (SIGINT), and waits for the server to stop on its own.
    #[cfg(unix)]
    fn interrupt(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status().expect("kill -INT");
        assert!(sent.success());
        let status = self.child.wait().expect("k3 serve stops");
        assert!(status.success(), "k3 serve after Ctrl-C: {status}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `k3 serve` on the demo model with `extra` flags; nothing is kept on disk unless `extra`
/// names a `--state-dir` (the user's cache folder is left alone).
fn serve(extra: &[&str]) -> Served {
    let on_disk: &[&str] = if extra.contains(&"--state-dir") { &[] } else { &["--kept-on-disk", "0"] };
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["serve", "--model", model_dir().to_str().expect("utf-8 path"), "--port", "0", "--threads", "1"])
        .args(on_disk)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn k3 serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("first line");
    let addr = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("first line: {line:?}"));
    let addr = addr.parse().expect("an address");
    Served { child, addr }
}

/// `k3 run --greedy` of `text`, stopping at the end-of-message id as a chat turn does.
fn run_greedy(text: &str, gen: usize) -> Vec<u64> {
    let tokenizer = k3_runtime::model::open_tokenizer(&model_dir()).expect("tokenizer");
    let eos = tokenizer.eos_id().expect("an eos id").to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["run", "--model", model_dir().to_str().expect("utf-8"), "--prompt", text, "--greedy"])
        .args(["--gen", &gen.to_string(), "--stop-ids", &eos, "--json"])
        .output()
        .expect("k3 run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    v["generated_ids"].as_array().expect("ids").iter().filter_map(Value::as_u64).collect()
}

/// The prompt a chat turn of `messages` renders to, with the checkpoint's template.
fn rendered(messages: &[ChatMessage]) -> String {
    let tokenizer = k3_runtime::model::open_tokenizer(&model_dir()).expect("tokenizer");
    let template = k3_runtime::model::chat_template(&tokenizer);
    assert!(template.is_jinja(), "the fixture's own chat_template is used");
    template.render(messages, ChatMode::Instruct, true).expect("render")
}

fn chat(addr: SocketAddr, messages: Value, extra: Value) -> Answer {
    let mut body = json!({ "model": MODEL, "messages": messages, "temperature": 0 });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    post_json(addr, "/v1/chat/completions", &body.to_string())
}

fn ids(v: &Value) -> Vec<u64> {
    v["token_ids"].as_array().expect("token_ids").iter().filter_map(Value::as_u64).collect()
}

/// The content, final chunk and every chunk of a streamed answer (each `data:` is JSON,
/// `[DONE]` last).
fn streamed(answer: &Answer) -> (String, Value) {
    assert_eq!(answer.status, 200);
    assert!(answer.header("content-type").is_some_and(|c| c.starts_with("text/event-stream")));
    let data = answer.sse_data();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "[DONE] comes last");
    let chunks: Vec<Value> =
        data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).expect("each data line is JSON")).collect();
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
    let content: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect::<Vec<_>>().concat();
    let last = chunks.last().expect("a final chunk").clone();
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c["choices"][0]["finish_reason"].is_null()));
    (content, last)
}

#[test]
fn greedy_chat_matches_k3_run_whole_and_streamed() {
    let served = serve(&[]);
    let addr = served.addr;
    let models = get(addr, "/v1/models").json();
    assert_eq!(models["data"][0]["id"], MODEL);
    assert!(!models.to_string().contains('/'), "no path in the model list: {models}");

    let user = "Hello there";
    let reference = run_greedy(&rendered(&[ChatMessage::new(Role::User, user)]), 24);
    assert!(reference.len() >= 2, "the fixture replies with more than one token: {reference:?}");
    let messages = json!([{ "role": "user", "content": user }]);
    let whole = chat(addr, messages.clone(), json!({ "max_tokens": 24 }));
    assert_eq!(whole.status, 200, "{}", String::from_utf8_lossy(&whole.body));
    let whole = whole.json();
    assert_eq!(ids(&whole), reference, "server ids = k3 run --greedy ids");
    let content = whole["choices"][0]["message"]["content"].as_str().expect("content").to_string();
    let finish = if reference.len() < 24 { "stop" } else { "length" };
    assert_eq!(whole["choices"][0]["finish_reason"], finish);
    assert_eq!(whole["usage"]["completion_tokens"], reference.len());
    for field in ["seconds_per_token", "io_wait_seconds", "true_hit_rate", "bytes_read"] {
        assert!(whole.get(field).is_some(), "{field} missing");
    }

    let stream = chat(addr, messages, json!({ "max_tokens": 24, "stream": true }));
    let (streamed_content, last) = streamed(&stream);
    assert_eq!(streamed_content, content, "the deltas add up to the whole answer");
    assert_eq!(ids(&last), reference);
    assert_eq!(last["choices"][0]["finish_reason"], finish);
    assert_eq!(last["usage"], whole["usage"]);
}

#[test]
fn stop_strings_and_max_tokens_end_the_reply() {
    let served = serve(&[]);
    let addr = served.addr;
    let messages = json!([{ "role": "user", "content": "Tell me a story" }]);
    let full = chat(addr, messages.clone(), json!({ "max_tokens": 24 })).json();
    let content = full["choices"][0]["message"]["content"].as_str().expect("content").to_string();
    let full_ids = ids(&full);
    assert!(full_ids.len() >= 2 && content.chars().count() >= 8, "the fixture reply is long enough: {content:?}");

    // A stop string from the middle of the greedy reply cuts it there.
    let stop: String = content.chars().skip(4).take(2).collect();
    let expected = &content[..content.find(&stop).expect("stop is in the content")];
    for stream in [false, true] {
        let answer =
            chat(addr, messages.clone(), json!({ "max_tokens": 24, "stop": [stop.clone()], "stream": stream }));
        let (got, end) = if stream {
            streamed(&answer)
        } else {
            let v = answer.json();
            (v["choices"][0]["message"]["content"].as_str().expect("content").to_string(), v)
        };
        assert_eq!(got, expected, "stream {stream}: cut before the stop string {stop:?}");
        assert_eq!(end["choices"][0]["finish_reason"], "stop");
        let cut = ids(&end);
        assert!(cut.len() < full_ids.len() && full_ids.starts_with(&cut), "stream {stream}: ids {cut:?}");
    }

    // max_tokens one short of the reply: finish_reason length, the first ids.
    let n = full_ids.len() - 1;
    let short = chat(addr, messages, json!({ "max_completion_tokens": n })).json();
    assert_eq!(short["choices"][0]["finish_reason"], "length");
    assert_eq!(ids(&short), full_ids[..n]);
}

#[test]
fn a_request_extending_the_previous_one_prefills_only_the_new_part() {
    let served = serve(&[]);
    let addr = served.addr;
    let first = chat(addr, json!([{ "role": "user", "content": "Hello there" }]), json!({ "max_tokens": 8 })).json();
    let reply = first["choices"][0]["message"]["content"].clone();
    let p1 = first["usage"]["prompt_tokens"].as_u64().expect("prompt_tokens");
    let g1 = first["usage"]["completion_tokens"].as_u64().expect("completion_tokens");
    assert_eq!(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    let extended = json!([
        { "role": "user", "content": "Hello there" },
        { "role": "assistant", "content": reply },
        { "role": "user", "content": "And then?" }
    ]);
    let second = chat(addr, extended.clone(), json!({ "max_tokens": 8 })).json();
    let usage = &second["usage"];
    let prompt = usage["prompt_tokens"].as_u64().expect("prompt_tokens");
    let cached = usage["prompt_tokens_details"]["cached_tokens"].as_u64().expect("cached_tokens");
    // Every position of the first exchange was kept except the last generated token,
    // which the engine had not fed yet.
    assert_eq!(cached, p1 + g1 - 1, "usage {usage}");
    assert_eq!(usage["prefilled_tokens"].as_u64(), Some(prompt - cached));

    // A history that differs (an edited reply) is prefilled whole.
    let edited = json!([
        { "role": "user", "content": "Hello there" },
        { "role": "assistant", "content": "something else" },
        { "role": "user", "content": "And then?" }
    ]);
    let third = chat(addr, edited, json!({ "max_tokens": 8 })).json();
    assert_eq!(third["usage"]["prompt_tokens_details"]["cached_tokens"], 0, "{}", third["usage"]);
}

/// A conversation's messages as sent: the user turns with the replies between them.
#[cfg(unix)]
fn exchange(turns: &[(&str, Option<&Value>)]) -> Value {
    let mut messages = Vec::new();
    for (user, reply) in turns {
        messages.push(json!({ "role": "user", "content": user }));
        if let Some(reply) = reply {
            messages.push(json!({ "role": "assistant", "content": reply }));
        }
    }
    Value::Array(messages)
}

#[cfg(unix)]
fn cached(answer: &Value) -> u64 {
    answer["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().expect("cached_tokens")
}

#[cfg(unix)]
fn content(answer: &Value) -> Value {
    answer["choices"][0]["message"]["content"].clone()
}

// Restarts the server with SIGINT (`kill -INT`): Unix signals.
#[cfg(unix)]
#[test]
fn interleaved_conversations_continue_from_ram_from_disk_and_after_a_restart_with_the_same_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().to_str().expect("utf-8");
    let flags = ["--kept-conversations", "1", "--kept-on-disk", "4", "--state-dir", state_dir];
    let params = json!({ "max_tokens": 6 });
    let served = serve(&flags);
    let addr = served.addr;
    let a1 = chat(addr, exchange(&[("Tell me of the ball.", None)]), params.clone()).json();
    let (ra1, a1_positions) = (content(&a1), a1["usage"]["total_tokens"].as_u64().expect("total"));
    // B pushes A out of RAM (one kept): A is saved in the folder.
    let b1 = chat(addr, exchange(&[("What of Mr Darcy?", None)]), params.clone()).json();
    let rb1 = content(&b1);
    assert_eq!(cached(&b1), 0);
    let files = |d: &std::path::Path| {
        std::fs::read_dir(d)
            .expect("dir")
            .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "k3state")))
            .count()
    };
    assert_eq!(files(dir.path()), 1, "A went to disk");
    // A continues from disk (B goes there in turn), then from RAM.
    let a2_messages = exchange(&[("Tell me of the ball.", Some(&ra1)), ("And then?", None)]);
    let a2 = chat(addr, a2_messages.clone(), params.clone()).json();
    assert_eq!(cached(&a2), a1_positions - 1, "A read back from disk: {}", a2["usage"]);
    assert_eq!(files(dir.path()), 1, "A left the folder, B entered it");
    let ra2 = content(&a2);
    let a3_messages = exchange(&[("Tell me of the ball.", Some(&ra1)), ("And then?", Some(&ra2)), ("Who came?", None)]);
    let a3 = chat(addr, a3_messages.clone(), params.clone()).json();
    assert!(cached(&a3) > cached(&a2), "A continued in RAM: {}", a3["usage"]);
    drop(served);

    // After a restart, B continues from the folder.
    let served = serve(&flags);
    let b2_messages = exchange(&[("What of Mr Darcy?", Some(&rb1)), ("Why?", None)]);
    let b2 = chat(served.addr, b2_messages.clone(), params.clone()).json();
    assert!(cached(&b2) > 0, "B read back after the restart: {}", b2["usage"]);
    let rb2 = content(&b2);
    // Ctrl-C saves B, held in RAM, to the folder: after the next start it continues too.
    served.interrupt();
    let served = serve(&flags);
    let b3_messages = exchange(&[("What of Mr Darcy?", Some(&rb1)), ("Why?", Some(&rb2)), ("When?", None)]);
    let b3 = chat(served.addr, b3_messages, params.clone()).json();
    assert!(cached(&b3) > cached(&b2), "B kept across a Ctrl-C: {}", b3["usage"]);
    drop(served);

    // The same requests on a server that keeps nothing give the same tokens.
    let fresh = serve(&["--kept-conversations", "1"]);
    // (B between A's two, so nothing either left is continued: every token is prefilled.)
    for (messages, kept) in [(a2_messages, &a2), (b2_messages, &b2), (a3_messages, &a3)] {
        let replayed = chat(fresh.addr, messages, params.clone()).json();
        assert_eq!(cached(&replayed), 0);
        assert_eq!(ids(&replayed), ids(kept), "tokens equal with and without kept state");
    }
}

/// True when `program` runs (`--version`).
fn have(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Skips with a message outside CI; fails in CI (`CI` set), where the tool is installed.
fn require(tool: &str, present: bool) -> bool {
    if !present {
        assert!(std::env::var_os("CI").is_none(), "{tool} is missing in CI (scripts/deps.sh installs it)");
        eprintln!("skipping: {tool} is not available");
    }
    present
}

/// Runs `tests/python/<script>` against a `k3 serve` started with `serve_args`; the
/// script gets K3_BASE_URL (`base` after the address), K3_MODEL and `env`, and must print
/// `expect`.
fn run_python_client(script: &str, serve_args: &[&str], base: &str, env: &[(&str, &str)], expect: &str) {
    let served = serve(serve_args);
    let out = Command::new("python3")
        .arg(k3_tests::repo_root().join("tests/python").join(script))
        .env("K3_BASE_URL", format!("http://{}{base}", served.addr))
        .env("K3_MODEL", MODEL)
        .envs(env.iter().copied())
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(expect), "{stdout}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn the_official_openai_python_client_works() {
    if require("python3 with the openai package", have("python3", &["-c", "import openai"])) {
        run_python_client("test_openai_client.py", &[], "/v1", &[], "openai client: 4 checks passed");
    }
}

/// Issue 40: eight `openai` clients at once against `--batch 4`: each reply equals the one it
/// gets alone, a client leaving mid-stream disturbs none, /health shows the batch
/// (`tests/python/test_openai_concurrent.py`).
#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn concurrent_openai_clients_decode_together_and_each_gets_its_reply_alone() {
    if require("python3 with the openai package", have("python3", &["-c", "import openai"])) {
        let args = ["--batch", "4", "--queue", "16"];
        let expect = "openai concurrent: 8 replies equal alone, 1 cancelled, batch 4";
        run_python_client("test_openai_concurrent.py", &args, "/v1", &[("K3_BATCH", "4")], expect);
    }
}

/// Runs `tests/python/test_openai_batch.py` in `mode` against `served`; its stdout.
fn batch_client(served: &Served, mode: &str, batch_id: Option<&str>) -> String {
    let out = Command::new("python3")
        .arg(k3_tests::repo_root().join("tests/python/test_openai_batch.py"))
        .env("K3_BASE_URL", format!("http://{}/v1", served.addr))
        .env("K3_MODEL", MODEL)
        .env("K3_BATCH_MODE", mode)
        .env("K3_BATCH_ID", batch_id.unwrap_or(""))
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{mode} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// Issue 40: the Batch API through the `openai` client's own `files` and `batches` calls:
/// results equal the requests asked live, an invalid request in the error file.
#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn the_openai_client_runs_a_batch_whose_results_equal_live_requests() {
    if require("python3 with the openai package", have("python3", &["-c", "import openai"])) {
        let dir = tempfile::tempdir().expect("tempdir");
        let served = serve(&["--batch-dir", dir.path().to_str().expect("utf-8"), "--batch", "2"]);
        let out = batch_client(&served, "whole", None);
        assert!(out.contains("openai batch: 6 results equal live, 1 error"), "{out}");
    }
}

/// Issue 40: a batch whose server is killed (SIGKILL) mid-run resumes when the server starts
/// again: every request answered exactly once, each equal to the request asked live.
#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn a_batch_killed_mid_run_resumes_with_nothing_lost_or_run_twice() {
    if require("python3 with the openai package", have("python3", &["-c", "import openai"])) {
        let dir = tempfile::tempdir().expect("tempdir");
        let flags = ["--batch-dir", dir.path().to_str().expect("utf-8"), "--batch", "1"];
        let served = serve(&flags);
        let started = batch_client(&served, "start", None);
        let id = started.trim().strip_prefix("batch started: ").unwrap_or_else(|| panic!("{started}")).to_string();
        drop(served); // SIGKILL
        let served = serve(&flags);
        let out = batch_client(&served, "finish", Some(&id));
        assert!(out.contains("openai batch: resumed, 12 results equal live, each once"), "{out}");
    }
}

/// Issue 40: past the batch and the queue, a request is refused with 429 and Retry-After.
#[test]
fn requests_past_the_batch_and_the_queue_get_429_with_retry_after() {
    let served = serve(&["--batch", "2", "--queue", "0"]);
    let addr = served.addr;
    let long = json!({ "max_tokens": 400 });
    let answers: Vec<Answer> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let extra = long.clone();
                scope.spawn(move || chat(addr, json!([{ "role": "user", "content": format!("Talk {i}") }]), extra))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a client thread")).collect()
    });
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    let served_ok = answers.iter().filter(|a| a.status == 200).count();
    assert!(served_ok >= 2, "two decode together: {:?}", answers.iter().map(|a| a.status).collect::<Vec<_>>());
    assert!(!refused.is_empty(), "six at once past a batch of 2 and no queue");
    assert!(refused.iter().all(|a| a.header("retry-after").is_some()), "429 says when to retry");
}

/// Issue 39: a tool loop, a streamed call, a json_schema reply and the agent 400s through
/// the official client, on the demo model (`tests/python/test_openai_tools.py`).
#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn the_official_openai_client_runs_a_tool_loop() {
    if require("python3 with the openai package", have("python3", &["-c", "import openai"])) {
        run_python_client("test_openai_tools.py", &[], "/v1", &[], "openai tools: 11 checks passed");
    }
}

/// Issue 39: the same loop through Anthropic's client on `/v1/messages`, with a key sent
/// as `x-api-key` (`tests/python/test_anthropic_client.py`).
#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn the_official_anthropic_client_runs_a_tool_loop() {
    if require("python3 with the anthropic package", have("python3", &["-c", "import anthropic"])) {
        let key = [("K3_KEY", "anthropic-key")];
        run_python_client(
            "test_anthropic_client.py",
            &["--api-key", "anthropic-key"],
            "",
            &key,
            "anthropic client: 6 checks passed",
        );
    }
}

/// Claude Code's native binary as `scripts/deps.sh test` installs it from npm.
fn claude_code() -> PathBuf {
    let platform =
        format!("claude-code-{}-{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "x64" } else { "arm64" });
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tools/agents/node_modules/@anthropic-ai")
        .join(platform)
        .join("claude")
}

/// Issue 39: a real agent client, Claude Code, pointed at `k3 serve` through
/// `ANTHROPIC_BASE_URL`, runs a whole tool loop on the demo model: its request (Claude
/// Code's system blocks, `thinking: adaptive`, `output_config`, a 32,000-token ceiling)
/// is accepted, the model calls `Read` (made to, by `--require-tool-call`: the demo model
/// never calls a tool on its own, and answers the result in text whatever Claude Code's
/// sampling draws) with arguments Claude Code's schema accepts, Claude Code runs the tool
/// and sends its result back, and the model answers in text.
#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn claude_code_runs_a_tool_loop_against_k3_serve() {
    let claude = claude_code();
    if !require("Claude Code (tools/agents)", claude.exists()) {
        return;
    }
    let served = serve(&["--api-key", "agent-key", "--require-tool-call"]);
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("notes.txt"), "The ball is on Tuesday.\n").expect("notes");
    let out = Command::new(&claude)
        .args(["-p", "Read notes.txt", "--model", MODEL, "--tools", "Read", "--system-prompt", "You read files."])
        .args(["--max-turns", "3", "--output-format", "stream-json", "--verbose", "--bare"])
        .current_dir(work.path())
        .env("HOME", work.path())
        .env("ANTHROPIC_BASE_URL", format!("http://{}", served.addr))
        .env("ANTHROPIC_API_KEY", "agent-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run claude");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "claude failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let blocks = |kind: &str, role: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["type"] == role)
            .flat_map(|e| e["message"]["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == kind)
            .collect()
    };
    // One reply of calls (up to 8 in parallel, as Claude Code's sampling draws them).
    let uses = blocks("tool_use", "assistant");
    assert!(!uses.is_empty(), "a tool call: {stdout}");
    let results = blocks("tool_result", "user");
    for call in &uses {
        assert_eq!(call["name"], "Read");
        assert!(call["input"]["file_path"].is_string(), "the call's input follows Read's schema: {call}");
        assert!(results.iter().any(|r| r["tool_use_id"] == call["id"]), "Claude Code ran {call} and sent its result");
    }
    assert!(!blocks("text", "assistant").is_empty(), "the model answered after the result: {stdout}");
    let end = events.iter().find(|e| e["type"] == "result").unwrap_or_else(|| panic!("a result: {stdout}"));
    assert_eq!((end["subtype"].as_str(), end["is_error"].as_bool()), (Some("success"), Some(false)), "{end}");
    assert_eq!(end["stop_reason"], "end_turn", "{end}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "drives Linux clients (python3, curl, Claude Code) that a Windows build under Wine cannot start"
)]
fn curl_streams_a_chat_completion() {
    if !require("curl", have("curl", &["--version"])) {
        return;
    }
    let served = serve(&["--api-key", "curl-key"]);
    let body = json!({ "model": MODEL, "messages": [{ "role": "user", "content": "Hi" }], "max_tokens": 4,
                       "temperature": 0, "stream": true });
    let url = format!("http://{}/v1/chat/completions", served.addr);
    let curl = |key: &str| {
        Command::new("curl")
            .args(["-sS", "-N", "-w", "\n%{http_code}", "-H", "Content-Type: application/json"])
            .args(["-H", &format!("Authorization: Bearer {key}"), "-d", &body.to_string(), &url])
            .output()
            .expect("curl")
    };
    let out = String::from_utf8_lossy(&curl("curl-key").stdout).into_owned();
    assert!(out.trim_end().ends_with("200"), "{out}");
    assert!(out.contains("data: [DONE]") && out.contains("\"finish_reason\""), "{out}");
    let refused = String::from_utf8_lossy(&curl("wrong").stdout).into_owned();
    assert!(refused.trim_end().ends_with("401"), "{refused}");
}

#[test]
fn serve_refuses_lan_without_a_key_and_names_a_free_port_when_taken() {
    let out = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["serve", "--model", model_dir().to_str().expect("utf-8"), "--host", "0.0.0.0"])
        .output()
        .expect("k3 serve");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("every interface"));
    // Probe finding (low): --max-tokens 0 silently became 1; refused, as in `k3 chat`.
    for command in ["serve", "chat"] {
        let out = Command::new(env!("CARGO_BIN_EXE_k3"))
            .args([command, "--model", model_dir().to_str().expect("utf-8"), "--max-tokens", "0"])
            .output()
            .expect("k3");
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--max-tokens 0"), "{command}");
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["serve", "--model", model_dir().to_str().expect("utf-8"), "--port", &port, "--kept-on-disk", "0"])
        .output()
        .expect("k3 serve");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already in use") && err.contains("use --port"), "{err}");
    assert!(out.stdout.is_empty(), "nothing listened");
}
