//! Tools against real MCP servers from npm (`tools/mcp-servers`, installed by
//! `scripts/deps.sh test`): the reference filesystem server over stdio and the
//! "everything" server over stdio and Streamable HTTP. A call runs only with a
//! permission; the server's program gets only its record's environment; a timeout, a
//! crash, Stop and an oversized result each come back as an outcome for the model.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k3_app::tools::{
    CallOutcome, EnvVarRecord, Permission, ServerTransportRecord, ToolError, ToolHub, ToolServerRecord,
    MAX_RESULT_BYTES,
};
use tokio_util::sync::CancellationToken;

/// The installed servers' programs, or `None` (outside CI: skipped with a message).
fn servers_bin() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/mcp-servers/node_modules/.bin");
    let present = bin.join("mcp-server-filesystem").exists() && which::which("node").is_ok();
    if !present {
        assert!(std::env::var_os("CI").is_none(), "the MCP servers are missing in CI (scripts/deps.sh test)");
        eprintln!("skipping: {} is not installed (bash scripts/deps.sh test)", bin.display());
    }
    present.then_some(bin)
}

/// The environment a user gives an npm server: where `node` is, and nothing else.
fn node_path() -> EnvVarRecord {
    let node = which::which("node").unwrap();
    EnvVarRecord { name: "PATH".into(), value: node.parent().unwrap().display().to_string() }
}

fn stdio(id: &str, program: PathBuf, args: &[&str], env: Vec<EnvVarRecord>) -> ToolServerRecord {
    ToolServerRecord {
        id: id.into(),
        name: format!("{id} server"),
        transport: ServerTransportRecord::Stdio {
            command: program.display().to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env,
            working_dir: None,
        },
        enabled: true,
        always_allowed: Vec::new(),
        timeout_seconds: 30,
    }
}

fn files_server(bin: &Path, root: &Path) -> ToolServerRecord {
    stdio("files", bin.join("mcp-server-filesystem"), &[&root.display().to_string()], vec![node_path()])
}

fn everything_server(bin: &Path) -> ToolServerRecord {
    stdio("everything", bin.join("mcp-server-everything"), &["stdio"], vec![node_path()])
}

fn hub() -> ToolHub {
    ToolHub::new(Box::new(|_| None))
}

async fn call(hub: &ToolHub, server: &ToolServerRecord, tool: &str, args: &str) -> CallOutcome {
    hub.call(server, tool, args, Permission::GivenNow, &CancellationToken::new()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filesystem_server_offers_its_tools_and_reads_a_file_only_with_permission() {
    let Some(bin) = servers_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "The launch code is 0451.\n").unwrap();
    let hub = hub();
    let mut server = files_server(&bin, dir.path());
    let offer = hub.offer(std::slice::from_ref(&server)).await;
    assert!(offer.problems.is_empty(), "{:?}", offer.problems);
    let read = offer.route("read_text_file").expect("read_text_file offered");
    assert_eq!((read.server_id.as_str(), read.tool.as_str()), ("files", "read_text_file"));
    assert_eq!(read.spec.parameters["type"], "object");
    assert!(read.spec.parameters["properties"]["path"].is_object(), "{}", read.spec.parameters);

    let path = dir.path().join("notes.txt");
    let args = serde_json::json!({ "path": path }).to_string();
    let stop = CancellationToken::new();
    let refused = hub.call(&server, "read_text_file", &args, Permission::Always, &stop).await;
    assert!(matches!(refused, Err(ToolError::NotAllowed { .. })), "{refused:?}");
    let outcome = hub.call(&server, "read_text_file", &args, Permission::GivenNow, &stop).await.unwrap();
    assert_eq!(outcome.text, "The launch code is 0451.\n");
    assert!(!outcome.is_error && !outcome.stopped && outcome.cut_from_bytes.is_none());
    server.always_allowed.push("read_text_file".into());
    let again = hub.call(&server, "read_text_file", &args, Permission::Always, &stop).await.unwrap();
    assert_eq!(again.text, outcome.text);

    // The tool's own refusal is an error result the model reads.
    let outside = call(&hub, &server, "read_text_file", r#"{"path": "/etc/hostname"}"#).await;
    assert!(outside.is_error && outside.text.contains("Access denied"), "{outside:?}");
    // Arguments that are not an object never reach the server.
    let bad = call(&hub, &server, "read_text_file", "[1, 2]").await;
    assert!(bad.is_error && bad.text.contains("not a JSON object"), "{bad:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_program_gets_only_the_environment_its_record_lists() {
    let Some(bin) = servers_bin() else { return };
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some(), "cargo gives the test process its variables");
    let mut env = vec![node_path()];
    env.push(EnvVarRecord { name: "K3_GIVEN".into(), value: "to the server".into() });
    let server = stdio("everything", bin.join("mcp-server-everything"), &["stdio"], env);
    let outcome = call(&hub(), &server, "get-env", "{}").await;
    assert!(!outcome.is_error, "{outcome:?}");
    let seen: serde_json::Value = serde_json::from_str(&outcome.text).expect("get-env answers JSON");
    let names: Vec<&str> = seen.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(seen["K3_GIVEN"], "to the server", "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("CARGO") || *n == "HOME"), "the app's environment leaked: {names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_an_error_result_and_the_server_still_answers() {
    let Some(bin) = servers_bin() else { return };
    let server = ToolServerRecord { timeout_seconds: 1, ..everything_server(&bin) };
    let hub = hub();
    let began = Instant::now();
    let late = call(&hub, &server, "trigger-long-running-operation", r#"{"duration": 20, "steps": 2}"#).await;
    assert!(began.elapsed() < Duration::from_secs(15), "the timeout did not end the call");
    assert!(late.is_error && !late.stopped, "{late:?}");
    assert!(late.text.contains("did not answer within 1 s"), "{}", late.text);
    let echo = call(&hub, &server, "echo", r#"{"message": "still here"}"#).await;
    assert!(!echo.is_error && echo.text.contains("still here"), "{echo:?}");
}

/// True once process `pid` has ended (gone, or a zombie waiting to be reaped).
#[cfg(target_os = "linux")]
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
fn wait_until_ended(pid: u32) -> bool {
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(10) {
        if ended(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_call_kills_the_servers_process_and_the_next_call_starts_it_again() {
    let Some(bin) = servers_bin() else { return };
    let server = everything_server(&bin);
    let hub = hub();
    assert!(!call(&hub, &server, "echo", r#"{"message": "up"}"#).await.is_error);
    let pid = hub.process_id(&server.id).await.expect("a stdio server has a process");
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stopper.cancel();
    });
    let began = Instant::now();
    let args = r#"{"duration": 30, "steps": 3}"#;
    let outcome = hub.call(&server, "trigger-long-running-operation", args, Permission::GivenNow, &stop).await.unwrap();
    assert!(began.elapsed() < Duration::from_secs(5), "Stop took {:?}", began.elapsed());
    assert!(outcome.stopped && outcome.is_error, "{outcome:?}");
    assert!(outcome.text.contains("stopped by the user"), "{}", outcome.text);
    assert!(wait_until_ended(pid), "the server's process {pid} is still running after Stop");
    let echo = call(&hub, &server, "echo", r#"{"message": "back"}"#).await;
    assert!(!echo.is_error && echo.text.contains("back"), "{echo:?}");
    assert_ne!(hub.process_id(&server.id).await, Some(pid), "a new process answers");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_call_is_an_error_result_naming_it_and_is_started_again() {
    let Some(bin) = servers_bin() else { return };
    let server = everything_server(&bin);
    let hub = hub();
    assert!(!call(&hub, &server, "echo", r#"{"message": "up"}"#).await.is_error);
    let pid = hub.process_id(&server.id).await.unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let outcome = call(&hub, &server, "trigger-long-running-operation", r#"{"duration": 20, "steps": 2}"#).await;
    assert!(outcome.is_error && !outcome.stopped, "{outcome:?}");
    assert!(outcome.text.contains("everything server stopped"), "{}", outcome.text);
    let echo = call(&hub, &server, "echo", r#"{"message": "again"}"#).await;
    assert!(!echo.is_error && echo.text.contains("again"), "{echo:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_result_is_cut_with_a_note_to_the_model() {
    let Some(bin) = servers_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let big = "0123456789abcdef\n".repeat(6_000);
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    let args = serde_json::json!({ "path": dir.path().join("big.txt") }).to_string();
    let outcome = call(&hub(), &files_server(&bin, dir.path()), "read_text_file", &args).await;
    assert_eq!(outcome.cut_from_bytes, Some(big.len()));
    assert!(outcome.text.starts_with(&big[..MAX_RESULT_BYTES]), "the first bytes are kept");
    let note = format!("[The result was cut to its first {MAX_RESULT_BYTES} of {} bytes.]", big.len());
    assert!(outcome.text.ends_with(&note), "{}", &outcome.text[MAX_RESULT_BYTES..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_is_missing_or_exits_at_once_is_named() {
    let hub = hub();
    let missing = stdio("gone", PathBuf::from("k3-no-such-mcp-server"), &[], Vec::new());
    let err = hub.tools(&missing).await.unwrap_err();
    assert!(matches!(&err, ToolError::Spawn { command, .. } if command == "k3-no-such-mcp-server"), "{err}");
    if cfg!(unix) {
        let args = ["-c", "echo 'bad config: no root folder' >&2; exit 3"];
        let quits = stdio("quits", PathBuf::from("/bin/sh"), &args, Vec::new());
        let err = hub.tools(&quits).await.unwrap_err().to_string();
        assert!(err.contains("quits server") && err.contains("bad config: no root folder"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_on_loopback_lists_and_calls_and_plain_http_elsewhere_is_refused() {
    let Some(bin) = servers_bin() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut program = std::process::Command::new(bin.join("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let began = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let http = |url: &str| ToolServerRecord {
        transport: ServerTransportRecord::Http { url: url.into(), key: None },
        ..stdio("web", PathBuf::new(), &[], Vec::new())
    };
    let hub = hub();
    let tools = hub.tools(&http(&url)).await;
    let echo = call(&hub, &http(&url), "echo", r#"{"message": "over http"}"#).await;
    let _ = program.kill();
    let _ = program.wait();
    let tools = tools.unwrap();
    assert!(tools.iter().any(|t| t.name == "get-sum"), "{tools:?}");
    assert!(!echo.is_error && echo.text.contains("over http"), "{echo:?}");
    let far = hub.tools(&http("http://example.org/mcp")).await.unwrap_err();
    assert!(matches!(far, ToolError::Address { .. }) && far.to_string().contains("use https"), "{far}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_offered_together_and_a_name_two_servers_share_is_told_apart() {
    let Some(bin) = servers_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let first = files_server(&bin, dir.path());
    let second = ToolServerRecord { id: "files2".into(), ..files_server(&bin, dir.path()) };
    let missing = stdio("gone", PathBuf::from("k3-no-such-mcp-server"), &[], Vec::new());
    let offer = hub().offer(&[first, second, everything_server(&bin), missing]).await;
    assert_eq!(offer.problems.len(), 1, "the missing program is the one problem: {:?}", offer.problems);
    assert_eq!(offer.problems[0].0, "gone server");
    let a = offer.route("files_read_text_file").expect("the first server's read_text_file, told apart");
    let b = offer.route("files2_read_text_file").expect("the second's");
    assert_eq!((a.server_id.as_str(), b.server_id.as_str(), a.tool.as_str()), ("files", "files2", "read_text_file"));
    assert!(offer.route("read_text_file").is_none(), "a shared name is never offered bare");
    let echo = offer.route("echo").expect("a name only one server has stays as it is");
    assert_eq!(echo.server_id, "everything");
    let names: Vec<&str> = offer.tools.iter().map(|t| t.name.as_str()).collect();
    let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "every offered name is unique: {names:?}");
}
