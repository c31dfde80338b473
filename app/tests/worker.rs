//! The engine worker over the real demo model and a real history file: a reply streams
//! and is saved with its stats; Stop ends it in the engine within 250 ms; regenerate,
//! edit-and-resend and a restart keep history and engine state consistent; a bad model
//! folder is a readable error and the old model keeps working. A conversation set to a
//! remote backend (k3 serve on loopback) gets the same greedy reply, with only the figures a
//! remote has; its key is in no file, export or log line; a remote that dies mid-stream
//! leaves the partial saved as failed with the reason.

use std::path::Path;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k3_app::backends::{Backends, KeyPlace, KeyVault, NewBackend};
use k3_app::error::ErrorKind;
use k3_app::history::{export_conversation, HistoryStore};
use k3_app::history::{ExportFormat, FinishReason, Message, MessageStatus, Role, SamplingSettings};
use k3_app::options::demo_model;
use k3_app::performance::Threads;
use k3_app::reply_event::{ReplyEmitter, ReplyEvent};
use k3_app::worker::{JobKind, LocalReply, ModelTarget, Worker};
use k3_engine::DecodeMode;

struct Harness {
    worker: Worker,
    store: Arc<Mutex<HistoryStore>>,
    backends: Backends,
}

impl Harness {
    fn generate(&self, conversation: i64, kind: JobKind, emit: ReplyEmitter) -> u64 {
        self.worker.generate(conversation, kind, emit, (&self.backends, LocalReply::serial())).unwrap()
    }
}

fn start(dir: &Path) -> Harness {
    let store = Arc::new(Mutex::new(HistoryStore::open(&dir.join("chats.sqlite")).unwrap()));
    let worker = Worker::spawn(store.clone(), demo_model(None), Threads::default()).unwrap();
    let settings = Arc::new(k3_app::settings::Settings::open(dir));
    Harness { worker, store, backends: Backends::open(dir, settings, false) }
}

/// An emitter that forwards events (with their arrival time) to the test thread.
fn recorder() -> (ReplyEmitter, Receiver<(Instant, ReplyEvent)>) {
    let (tx, rx) = mpsc::channel();
    (Box::new(move |e| drop(tx.send((Instant::now(), e)))), rx)
}

/// Every event of a job, up to and including its last (finished or failed).
fn drain(rx: &Receiver<(Instant, ReplyEvent)>) -> Vec<ReplyEvent> {
    let mut out = Vec::new();
    loop {
        let (_, e) = rx.recv_timeout(Duration::from_secs(60)).expect("the job ended");
        let last = matches!(e, ReplyEvent::Finished { .. } | ReplyEvent::Failed { .. });
        out.push(e);
        if last {
            return out;
        }
    }
}

fn settings(max_tokens: u32) -> SamplingSettings {
    SamplingSettings { temperature: 0.0, top_p: 1.0, seed: 0, max_tokens, ..SamplingSettings::default() }
}

fn conversation(h: &Harness, s: &SamplingSettings) -> i64 {
    let store = h.store.lock().unwrap();
    let c = store.create(s).unwrap();
    store.update(c.id, "test", "", s).unwrap();
    c.id
}

fn finished(events: &[ReplyEvent]) -> (FinishReason, Message) {
    match events.last() {
        Some(ReplyEvent::Finished { reason, message, .. }) => (*reason, message.clone()),
        other => panic!("expected finished, got {other:?}"),
    }
}

fn streamed_text(events: &[ReplyEvent]) -> String {
    events
        .iter()
        .filter_map(|e| if let ReplyEvent::Token { text, .. } = e { Some(text.as_str()) } else { None })
        .collect()
}

#[test]
fn a_reply_streams_and_is_saved_with_its_stats() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let id = conversation(&h, &settings(12));
    let (emit, rx) = recorder();
    let job = h.generate(id, JobKind::Send { text: "Hello there".into() }, emit);
    let events = drain(&rx);
    assert!(matches!(events[0], ReplyEvent::Queued { job_id, position: 0 } if job_id == job));
    match &events[1] {
        ReplyEvent::Started { user_message: Some(m), conversation_id, .. } => {
            assert_eq!((m.role, m.content.as_str(), *conversation_id), (Role::User, "Hello there", id));
        }
        other => panic!("expected started, got {other:?}"),
    }
    assert!(events
        .iter()
        .any(|e| matches!(e, ReplyEvent::PrefillProgress { done, total, .. } if done == total && *total > 0)));
    let n_tokens = events.iter().filter(|e| matches!(e, ReplyEvent::Token { .. })).count();
    let (reason, message) = finished(&events);
    let stats = message.stats.clone().expect("stats are stored");
    assert_eq!(stats.output_tokens as usize, n_tokens);
    assert!(matches!(reason, FinishReason::Length | FinishReason::Stop));
    assert_eq!(message.status, MessageStatus::Complete);
    assert_eq!(stats.prefilled_tokens, stats.prompt_tokens, "a first turn prefills everything");
    assert!(stats.io_share.is_some(), "the demo streams its experts through the cache");
    assert!(stats.true_hit_rate.is_some());
    assert_eq!(streamed_text(&events).trim_end(), message.content.trim_end(), "streamed text = saved text");
    let saved = h.store.lock().unwrap().messages(id).unwrap();
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1], message);

    // The next turn reuses the engine state: only the new turn is prefilled.
    let (emit, rx) = recorder();
    h.generate(id, JobKind::Send { text: "And then?".into() }, emit);
    let (_, second) = finished(&drain(&rx));
    let s2 = second.stats.unwrap();
    assert!(s2.prefilled_tokens < s2.prompt_tokens, "prefilled {} of {}", s2.prefilled_tokens, s2.prompt_tokens);
}

/// Speculative decoding (Settings › Performance) changes no reply: two turns of one
/// conversation are saved word for word as serial decoding saves them.
#[test]
fn replies_decoded_speculatively_are_saved_exactly_as_serial_replies() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let (serial, fast) = (conversation(&h, &settings(48)), conversation(&h, &settings(48)));
    let mut replies = Vec::new();
    for text in ["Say something long", "And then?"] {
        for (id, mode) in [(serial, DecodeMode::Incremental), (fast, DecodeMode::Speculative { max_draft: 4 })] {
            let (emit, rx) = recorder();
            let local = LocalReply { mode, ..LocalReply::serial() };
            h.worker.generate(id, JobKind::Send { text: text.into() }, emit, (&h.backends, local)).unwrap();
            let events = drain(&rx);
            let (_, message) = finished(&events);
            replies.push((message.content.clone(), streamed_text(&events), message.stats.map(|s| s.output_tokens)));
        }
    }
    assert!(!replies[0].0.trim().is_empty(), "the demo wrote a reply");
    assert_eq!(replies[1], replies[0], "turn 1: saved text, streamed text and token count");
    assert_eq!(replies[3], replies[2], "turn 2");
}

#[test]
fn stop_ends_the_reply_in_the_engine_within_250_ms_and_keeps_the_partial() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    // Greedy, the demo model answers this prompt with 1,365 tokens before its end-of-message
    // token (measured with `k3 chat --greedy`): long enough to be stopped midway.
    let id = conversation(&h, &settings(30_000));
    let (emit, rx) = recorder();
    let job = h.generate(id, JobKind::Send { text: "Say something long".into() }, emit);
    let mut tokens = 0;
    while tokens < 20 {
        if let (_, ReplyEvent::Token { .. }) = rx.recv_timeout(Duration::from_secs(60)).unwrap() {
            tokens += 1;
        }
    }
    let asked = Instant::now();
    assert!(h.worker.cancel(job));
    let end = loop {
        let (at, e) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        if let ReplyEvent::Finished { reason, message, .. } = e {
            break (at, reason, message);
        }
    };
    let latency = end.0 - asked;
    eprintln!("stop latency (cancel -> finished event, reply saved): {latency:?}");
    assert!(latency < Duration::from_millis(250), "stop took {latency:?}");
    assert_eq!(end.1, FinishReason::Cancelled);
    assert_eq!(end.2.status, MessageStatus::Stopped);
    let out = end.2.stats.unwrap().output_tokens;
    assert!((20..1_365).contains(&out), "{out} tokens");
    assert!(!h.worker.cancel(job), "the job is gone once it ended");

    // The stopped reply stays in the history, and the conversation goes on.
    let (emit, rx) = recorder();
    h.generate(id, JobKind::Send { text: "Go on".into() }, emit);
    let saved_before = h.store.lock().unwrap().messages(id).unwrap().len();
    let _ = finished(&drain(&rx));
    assert_eq!(saved_before.max(3), 3);
    assert_eq!(h.store.lock().unwrap().messages(id).unwrap().len(), 4);
}

/// With its engine state saved (`saved_states`), a conversation continued after a restart
/// prefills only its new message, and replies as the process that never stopped.
#[test]
fn a_restart_with_the_saved_state_prefills_only_the_new_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("states").join("1.k3state");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let saving = || LocalReply { state_file: Some(file.clone()), ..LocalReply::serial() };
    let ask = |h: &Harness, id: i64, text: &str, local: LocalReply| {
        let (emit, rx) = recorder();
        h.worker.generate(id, JobKind::Send { text: text.into() }, emit, (&h.backends, local)).unwrap();
        finished(&drain(&rx)).1
    };
    // The process that never stops, for the reply to compare with.
    let (stayed, id) = {
        let h = start(&dir.path().join("stayed"));
        let id = conversation(&h, &settings(6));
        ask(&h, id, "Remember this", LocalReply::serial());
        (ask(&h, id, "What was it?", LocalReply::serial()), id)
    };
    let id = {
        let h = start(dir.path());
        let id2 = conversation(&h, &settings(6));
        assert_eq!(id2, id, "both data folders number conversations alike");
        ask(&h, id2, "Remember this", saving());
        id2
    };
    assert!(file.exists(), "the reply saved its state");
    let h = start(dir.path());
    let m = ask(&h, id, "What was it?", saving());
    let s = m.stats.unwrap();
    assert!(s.prefilled_tokens < s.prompt_tokens, "prefilled {} of {}", s.prefilled_tokens, s.prompt_tokens);
    assert_eq!(m.content, stayed.content, "the reply after the restart");
    assert_eq!(s.prefilled_tokens, stayed.stats.unwrap().prefilled_tokens, "as few tokens as the process that stayed");
}

#[test]
fn regenerate_and_edit_rewrite_history_and_rebuild_engine_state() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let id = conversation(&h, &settings(8));
    let run = |kind: JobKind| {
        let (emit, rx) = recorder();
        h.generate(id, kind, emit);
        drain(&rx)
    };
    let (_, first) = finished(&run(JobKind::Send { text: "Hello there".into() }));
    let events = run(JobKind::Regenerate);
    assert!(matches!(events[1], ReplyEvent::Started { user_message: None, .. }));
    let (_, again) = finished(&events);
    assert_eq!(again.content, first.content, "greedy: the same reply again");
    assert_ne!(again.id, first.id, "the old reply was replaced");
    let saved = h.store.lock().unwrap().messages(id).unwrap();
    assert_eq!(saved.len(), 2);

    let user_id = saved[0].id;
    let events = run(JobKind::Edit { message_id: user_id, text: "Something else entirely".into() });
    let (_, edited) = finished(&events);
    let saved = h.store.lock().unwrap().messages(id).unwrap();
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[0].content, "Something else entirely");
    assert_eq!(saved[1].id, edited.id);
    assert_eq!(edited.stats.unwrap().prefilled_tokens, edited_prompt_len(&saved), "an edit prefills the whole history");

    let failed = run(JobKind::Edit { message_id: saved[1].id, text: "x".into() });
    match failed.last() {
        Some(ReplyEvent::Failed { error, message: None, .. }) => {
            assert_eq!(error.kind, ErrorKind::InvalidArgument)
        }
        other => panic!("editing an assistant message must fail: {other:?}"),
    }
}

fn edited_prompt_len(saved: &[Message]) -> u32 {
    saved[1].stats.as_ref().unwrap().prompt_tokens
}

#[test]
fn a_restart_resumes_the_conversation_from_the_history_file() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let h = start(dir.path());
        let id = conversation(&h, &settings(6));
        let (emit, rx) = recorder();
        h.generate(id, JobKind::Send { text: "Remember this".into() }, emit);
        let _ = finished(&drain(&rx));
        id
    };
    let h = start(dir.path());
    assert_eq!(h.store.lock().unwrap().messages(id).unwrap().len(), 2);
    let (emit, rx) = recorder();
    h.generate(id, JobKind::Send { text: "What was it?".into() }, emit);
    let (_, m) = finished(&drain(&rx));
    let s = m.stats.unwrap();
    assert_eq!(
        s.prefilled_tokens, s.prompt_tokens,
        "a new process has no engine state: the whole history is prefilled"
    );
    assert_eq!(h.store.lock().unwrap().messages(id).unwrap().len(), 4);
}

#[test]
fn a_bad_model_folder_is_a_readable_error_and_the_old_model_stays() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let broken = dir.path().join("broken-model");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("config.json"), "{\"model_type\": \"kimi_k3\"").unwrap();
    let e = h.worker.open_model(ModelTarget::folder(broken.clone(), false)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ModelConfig, "{e:?}");
    assert!(e.message.contains("config.json"), "{}", e.message);
    let status = h.worker.status();
    assert!(status.model.unwrap().is_demo, "the demo stays loaded");
    assert_eq!(status.error.unwrap().kind, ErrorKind::ModelConfig);

    let no_shards = dir.path().join("no-shards");
    std::fs::create_dir(&no_shards).unwrap();
    std::fs::copy(demo_model(None).path.join("config.json"), no_shards.join("config.json")).unwrap();
    let e = h.worker.open_model(ModelTarget::folder(no_shards, false)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Checkpoint, "{e:?}");

    let id = conversation(&h, &settings(3));
    let (emit, rx) = recorder();
    h.generate(id, JobKind::Send { text: "still there?".into() }, emit);
    let (_, m) = finished(&drain(&rx));
    assert_eq!(m.stats.unwrap().output_tokens, 3);
}

// ---- remote backends: k3 serve's library on 127.0.0.1 as the remote ----

const KEY: &str = "sk-remote-test-5c2e91d04b";

/// Every log record of the process, for the test that greps them for the key.
static LOGGED: Mutex<String> = Mutex::new(String::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let line = format!("{} {} {}\n", record.level(), record.target(), record.args());
        LOGGED.lock().unwrap_or_else(|p| p.into_inner()).push_str(&line);
    }
    fn flush(&self) {}
}

fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_boxed_logger(Box::new(Capture)).unwrap();
        log::set_max_level(log::LevelFilter::Trace);
    });
}

/// k3 serve over the demo model with `KEY`, and its base URL.
fn serve_demo() -> (k3_server::ServerHandle, String) {
    let runtime = Arc::new(k3_runtime::Runtime::start().unwrap());
    let options = k3_engine::EngineOptions::resident(demo_model(None).path, Some(1));
    runtime.open_model(k3_runtime::ModelRequest { options, is_demo: false }).unwrap();
    let config = k3_server::ServerConfig { port: 0, api_key: Some(KEY.into()), ..Default::default() };
    let server = k3_server::Server::start(runtime, config).unwrap();
    let url = format!("http://{}/v1", server.local_addr());
    (server, url)
}

fn add_backend(h: &Harness, url: &str, key: &str) -> String {
    let new =
        NewBackend { name: "Loopback box".into(), base_url: url.into(), api_key: key.into(), model: "k3-demo".into() };
    h.backends.add(new).unwrap().id
}

#[test]
fn a_remote_conversation_is_answered_by_its_backend_like_the_local_engine_and_the_key_is_nowhere() {
    capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let (server, url) = serve_demo();
    let backend = add_backend(&h, &url, KEY);
    let (local, remote) = (conversation(&h, &settings(12)), conversation(&h, &settings(12)));
    h.store.lock().unwrap().set_backend(remote, Some(&backend)).unwrap();

    let (emit, rx) = recorder();
    h.generate(local, JobKind::Send { text: "Hello there".into() }, emit);
    let (_, here) = finished(&drain(&rx));
    let (emit, rx) = recorder();
    h.generate(remote, JobKind::Send { text: "Hello there".into() }, emit);
    let events = drain(&rx);
    assert!(matches!(events[0], ReplyEvent::Queued { position: 0, .. }));
    let (_, there) = finished(&events);
    assert_eq!(there.content, here.content, "the same greedy reply, answered on the other side of a socket");
    assert_eq!(streamed_text(&events), there.content);
    let stats = there.stats.clone().unwrap();
    assert_eq!(stats.remote_host.as_deref(), Some(server.local_addr().to_string().as_str()));
    assert_eq!((stats.io_share, stats.true_hit_rate, stats.bytes_read), (None, None, 0));
    assert_eq!(stats.output_tokens, here.stats.unwrap().output_tokens, "the server's usage");

    // The key: in a user-only file (no keyring here), and nowhere else.
    let key_file = dir.path().join("backend-keys").join(format!("{backend}.key"));
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), KEY);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&key_file), mode(key_file.parent().unwrap())), (0o600, 0o700));
    }
    let conversation = h.store.lock().unwrap().get(remote).unwrap();
    let mut haystack: Vec<(String, Vec<u8>)> = Vec::new();
    for format in [ExportFormat::Markdown, ExportFormat::Json] {
        haystack.push((format!("{format:?} export"), export_conversation(&conversation, format).content.into_bytes()));
    }
    haystack.push(("the log".into(), LOGGED.lock().unwrap().clone().into_bytes()));
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            haystack.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    assert!(haystack.iter().any(|(name, _)| name.ends_with("chats.sqlite")), "the history file was read");
    assert!(haystack.iter().any(|(name, _)| name.ends_with("backends.json")));
    for (name, bytes) in &haystack {
        let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!found, "the API key is in {name}");
    }
    assert!(LOGGED.lock().unwrap().contains("backend loopback-box added"), "the log was captured");
}

#[test]
fn a_remote_that_dies_mid_stream_leaves_the_partial_reply_saved_as_failed_with_the_reason() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut seen = Vec::new();
        // The request head and its JSON body (the body ends the request: it closes with `}`).
        while !(seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.ends_with(b"}")) {
            let n = conn.read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        let body = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half a\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" reply\"}}]}\n\n";
        conn.write_all(body.as_bytes()).unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let backend = add_backend(&h, &url, "");
    let id = conversation(&h, &settings(12));
    h.store.lock().unwrap().set_backend(id, Some(&backend)).unwrap();
    let (emit, rx) = recorder();
    h.generate(id, JobKind::Send { text: "Hi".into() }, emit);
    let events = drain(&rx);
    let Some(ReplyEvent::Failed { error, message: Some(saved), .. }) = events.last() else {
        panic!("expected a failure with a saved partial, got {:?}", events.last())
    };
    assert_eq!(error.kind, ErrorKind::Remote);
    assert!(error.message.contains(&url) && error.message.contains("ended before the reply did"), "{}", error.message);
    let stored = h.store.lock().unwrap().messages(id).unwrap();
    assert_eq!(stored.last(), Some(saved));
    assert_eq!((saved.content.as_str(), saved.status), ("Half a reply", MessageStatus::Failed));
    assert_eq!(saved.failure.as_deref(), Some(error.message.as_str()), "the reason is kept with it");
}

#[test]
fn a_conversation_set_to_a_removed_backend_is_refused_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path());
    let backend = add_backend(&h, "http://127.0.0.1:9/v1", "");
    let id = conversation(&h, &settings(4));
    h.store.lock().unwrap().set_backend(id, Some(&backend)).unwrap();
    h.backends.remove(&backend).unwrap();
    let (emit, _rx) = recorder();
    let e = h
        .worker
        .generate(id, JobKind::Send { text: "Hi".into() }, emit, (&h.backends, LocalReply::serial()))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert!(e.message.contains("removed in Settings › Backends"), "{}", e.message);
    assert!(h.store.lock().unwrap().messages(id).unwrap().is_empty(), "the message was not even committed");
}

/// Needs a Secret Service on the session bus: CI runs it under `dbus-run-session` with an
/// unlocked gnome-keyring (scripts/test.sh); elsewhere `cargo test -- --ignored` where one runs.
#[test]
#[ignore = "needs a Secret Service (gnome-keyring) on the session bus"]
fn keys_go_to_the_system_keyring_when_one_answers() {
    let dir = tempfile::tempdir().unwrap();
    let vault = KeyVault::open(dir.path(), true);
    let id = format!("keyring-test-{}", std::process::id());
    assert_eq!(vault.save(&id, KEY).unwrap(), KeyPlace::SystemKeyring, "the Secret Service took the key");
    assert!(!dir.path().join("backend-keys").join(format!("{id}.key")).exists(), "no fallback file");
    assert_eq!(vault.load(&id, KeyPlace::SystemKeyring).unwrap(), KEY);
    vault.delete(&id).unwrap();
    let e = vault.load(&id, KeyPlace::SystemKeyring).unwrap_err();
    assert!(e.message.contains("enter it again in Settings › Backends"), "{}", e.message);
}
