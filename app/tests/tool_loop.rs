//! The tool loop over the real demo model and the reference filesystem and "everything"
//! MCP servers from npm (`tools/mcp-servers`): a conversation that requires a tool gets a
//! call, the user allows it, the server's result is saved as a tool message and the reply
//! to it continues; Deny, Always allow, revoking it, and Stop during a call; the whole
//! exchange is in the history file when it is opened again.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k3_app::backends::Backends;
use k3_app::history::{HistoryStore, NewAssistantMessage};
use k3_app::history::{Message, MessageStatus, Role, SamplingSettings, ToolCall, ToolUse};
use k3_app::options::demo_model;
use k3_app::performance::Threads;
use k3_app::reply_event::{ReplyEmitter, ReplyEvent};
use k3_app::settings::Settings;
use k3_app::tools::view::{EnvVar, ToolDecision, ToolServerInput, ToolTransport};
use k3_app::tools::ToolsHost;
use k3_app::worker::{JobKind, LocalReply, Worker};
use k3_engine::chat::ToolChoice;

/// The installed servers' programs, or `None` (outside CI: skipped with a message).
fn servers_bin() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/mcp-servers/node_modules/.bin");
    let present = bin.join("mcp-server-filesystem").exists();
    if !present {
        assert!(std::env::var_os("CI").is_none(), "the MCP servers are missing in CI (scripts/deps.sh test)");
        eprintln!("skipping: {} is not installed (bash scripts/deps.sh test)", bin.display());
    }
    present.then_some(bin)
}

/// Where `node` is: the one variable the user gives an npm server.
fn node_path() -> EnvVar {
    let out = std::process::Command::new("sh").args(["-c", "command -v node"]).output().unwrap();
    let node = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    EnvVar { name: "PATH".into(), value: node.parent().unwrap().display().to_string() }
}

fn stdio_input(name: &str, program: PathBuf, args: Vec<String>) -> ToolServerInput {
    ToolServerInput {
        id: String::new(),
        name: name.into(),
        transport: ToolTransport::Stdio {
            command: program.display().to_string(),
            args,
            env: vec![node_path()],
            working_dir: None,
        },
        enabled: true,
        timeout_seconds: 30,
        key: None,
        clear_key: false,
    }
}

struct Loop {
    rt: tokio::runtime::Runtime,
    tools: ToolsHost,
    store: Arc<Mutex<HistoryStore>>,
    files: PathBuf,
    server_id: String,
}

/// A data folder with the filesystem server (rooted at `files/`, which holds notes.txt)
/// saved in Settings › Tools.
fn setup(dir: &Path, bin: &Path) -> Loop {
    let files = dir.join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("notes.txt"), "The launch code is 0451.\n").unwrap();
    let tools = ToolsHost::open(dir, Arc::new(Settings::open(dir)), false);
    let args = vec![files.display().to_string()];
    let server = tools.save(stdio_input("Files", bin.join("mcp-server-filesystem"), args)).unwrap();
    assert_eq!(server.id, "files");
    let store = Arc::new(Mutex::new(HistoryStore::open(&dir.join("chats.sqlite")).unwrap()));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    Loop { rt, tools, store, files, server_id: server.id }
}

impl Loop {
    fn conversation(&self, s: &SamplingSettings) -> i64 {
        let store = self.store.lock().unwrap();
        let c = store.create(s).unwrap();
        store.update(c.id, "tools", "", s).unwrap();
        c.id
    }

    fn decide(&self, id: i64, call: &str, decision: ToolDecision) -> Result<Message, String> {
        self.rt.block_on(self.tools.decide(&self.store, id, call, decision)).map_err(|e| e.message)
    }

    fn messages(&self, id: i64) -> Vec<Message> {
        self.store.lock().unwrap().messages(id).unwrap()
    }

    fn settings(&self, id: i64) -> SamplingSettings {
        self.store.lock().unwrap().get(id).unwrap().settings
    }
}

fn with_tools(server: &str, choice: ToolUse, max_tokens: u32) -> SamplingSettings {
    SamplingSettings {
        temperature: 0.0,
        top_p: 1.0,
        max_tokens,
        tool_servers: vec![server.into()],
        tool_choice: choice,
        ..SamplingSettings::default()
    }
}

fn recorder() -> (ReplyEmitter, Receiver<ReplyEvent>) {
    let (tx, rx) = mpsc::channel();
    (Box::new(move |e| drop(tx.send(e))), rx)
}

fn finished(rx: &Receiver<ReplyEvent>) -> Message {
    loop {
        match rx.recv_timeout(Duration::from_secs(120)).expect("the job ended") {
            ReplyEvent::Finished { message, .. } => return message,
            ReplyEvent::Failed { error, .. } => panic!("the reply failed: {error:?}"),
            _ => {}
        }
    }
}

#[test]
fn the_demo_model_calls_a_tool_the_user_allows_and_its_reply_continues_from_the_result() {
    let Some(bin) = servers_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let l = setup(dir.path(), &bin);
    let worker = Worker::spawn(l.store.clone(), demo_model(None), Threads::default()).unwrap();
    let backends = Backends::open(dir.path(), Arc::new(Settings::open(dir.path())), false);
    // The demo model writes an unbounded string until its tokens run out, so this
    // conversation keeps only the server's tool without arguments turned on.
    let listed = l.rt.block_on(l.tools.tools_of(&l.server_id)).unwrap();
    let keep = "list_allowed_directories";
    assert!(listed.iter().any(|t| t.name == keep) && listed.len() > 5, "{listed:?}");
    let tools_off = listed.iter().filter(|t| t.name != keep).map(|t| format!("{}/{}", l.server_id, t.name)).collect();
    let id = l.conversation(&SamplingSettings { tools_off, ..with_tools(&l.server_id, ToolUse::Required, 200) });

    let (tools, choice) = l.rt.block_on(l.tools.for_reply(&l.settings(id), false));
    assert_eq!(choice, ToolChoice::Required);
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), [keep], "only the tool left on");
    let (emit, rx) = recorder();
    let kind = JobKind::Send { text: "What is in notes.txt?".into() };
    worker
        .generate(id, kind, emit, (&backends, LocalReply { tools, tool_choice: choice, ..LocalReply::serial() }))
        .unwrap();
    let asked = finished(&rx);
    assert!(!asked.tool_calls.is_empty(), "a required reply calls a tool: {asked:?}");
    eprintln!("the demo model called {:?}", asked.tool_calls);

    let pending = l.rt.block_on(l.tools.pending(&l.settings(id), &l.messages(id)));
    assert_eq!(pending.len(), asked.tool_calls.len());
    for (call, waiting) in asked.tool_calls.iter().zip(&pending) {
        assert_eq!((&waiting.call_id, &waiting.tool, waiting.message_id), (&call.id, &call.tool, asked.id));
        assert_eq!(waiting.server_name.as_deref(), Some("Files"));
        assert!(!waiting.always_allowed);
        let result = l.decide(id, &call.id, ToolDecision::Allow).unwrap();
        let answer = result.tool_answer.clone().unwrap();
        assert_eq!(
            (result.role, answer.call_id.as_str(), answer.server.as_deref()),
            (Role::Tool, call.id.as_str(), Some("Files"))
        );
        // What the server says to these arguments, asked again directly.
        let again = l.decide_again(call);
        assert_eq!(result.content, again, "the saved result is the server's answer");
        assert!(result.content.contains(&l.files.display().to_string()), "{}", result.content);
    }
    assert!(l.rt.block_on(l.tools.pending(&l.settings(id), &l.messages(id))).is_empty(), "every call answered");

    let (tools, choice) = l.rt.block_on(l.tools.for_reply(&l.settings(id), true));
    assert_eq!(choice, ToolChoice::Auto, "the reply to results decides for itself");
    let (emit, rx) = recorder();
    worker
        .generate(
            id,
            JobKind::Continue,
            emit,
            (&backends, LocalReply { tools, tool_choice: choice, ..LocalReply::serial() }),
        )
        .unwrap();
    let answer = finished(&rx);
    // (The demo's own chat template renders no tool calls, so this reply prefills the
    // whole conversation; K3's template keeps the session: tests/chat.rs.)
    assert_eq!((answer.role, answer.status), (Role::Assistant, MessageStatus::Complete));
    assert!(answer.stats.as_ref().is_some_and(|s| s.output_tokens > 0), "{answer:?}");

    let saved = l.messages(id);
    let roles: Vec<Role> = saved.iter().map(|m| m.role).collect();
    let results = asked.tool_calls.len();
    assert_eq!(roles.len(), 3 + results, "{roles:?}");
    assert_eq!((roles[0], roles[1], roles[2 + results]), (Role::User, Role::Assistant, Role::Assistant));
    assert!(roles[2..2 + results].iter().all(|r| *r == Role::Tool));
    drop(worker);
    let reopened = HistoryStore::open(&dir.path().join("chats.sqlite")).unwrap().messages(id).unwrap();
    assert_eq!(reopened, saved, "the loop is in the history file");
    let _ = &l.files;
}

impl Loop {
    /// The filesystem server's answer to `call`'s arguments, from a hub of its own.
    fn decide_again(&self, call: &ToolCall) -> String {
        let record = Settings::open(self.files.parent().unwrap()).get::<k3_app::tools::ToolServersRecord>();
        let server = record.get(&self.server_id).unwrap().clone();
        let hub = k3_app::tools::ToolHub::new(Box::new(|_| None));
        let stop = tokio_util::sync::CancellationToken::new();
        let permission = k3_app::tools::Permission::GivenNow;
        let outcome = self.rt.block_on(hub.call(&server, &call.tool, &call.arguments, permission, &stop)).unwrap();
        self.rt.block_on(async move { drop(hub) });
        outcome.text
    }

    /// A stored reply calling read_text_file with `paths`, after a user message.
    fn stored_calls(&self, id: i64, paths: &[&str]) -> Vec<ToolCall> {
        let calls: Vec<ToolCall> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| ToolCall {
                id: format!("call_{}_{i}", self.messages(id).len()),
                tool: "read_text_file".into(),
                index: i as u32 + 1,
                arguments: serde_json::json!({ "path": self.files.join(p) }).to_string(),
            })
            .collect();
        let mut store = self.store.lock().unwrap();
        store.add_user_message(id, "Read them").unwrap();
        store.add_assistant_message(id, &calling(calls.clone())).unwrap();
        calls
    }
}

/// A stored reply that makes `calls` and says nothing else.
fn calling(calls: Vec<ToolCall>) -> NewAssistantMessage {
    NewAssistantMessage {
        content: String::new(),
        think: None,
        status: MessageStatus::Complete,
        stats: None,
        failure: None,
        tool_calls: calls,
    }
}

#[test]
fn deny_always_allow_and_revoking_it_each_decide_what_runs() {
    let Some(bin) = servers_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let l = setup(dir.path(), &bin);
    let id = l.conversation(&with_tools(&l.server_id, ToolUse::Auto, 16));
    let calls = l.stored_calls(id, &["notes.txt", "notes.txt"]);

    let refused = l.decide(id, &calls[0].id, ToolDecision::Auto).unwrap_err();
    assert!(refused.contains("needs the user's permission"), "{refused}");
    assert_eq!(l.messages(id).len(), 2, "a refused call saves nothing");
    let denied = l.decide(id, &calls[0].id, ToolDecision::Deny).unwrap();
    assert_eq!((denied.role, denied.status), (Role::Tool, MessageStatus::Failed));
    assert_eq!(denied.content, "Error: the user denied this call of read_text_file.");
    let twice = l.decide(id, &calls[0].id, ToolDecision::Allow).unwrap_err();
    assert!(twice.contains("does not wait for an answer"), "{twice}");

    let always = l.decide(id, &calls[1].id, ToolDecision::AlwaysAllow).unwrap();
    assert_eq!((always.content.as_str(), always.status), ("The launch code is 0451.\n", MessageStatus::Complete));
    let server = l.tools.servers().into_iter().find(|s| s.id == l.server_id).unwrap();
    assert_eq!(server.always_allowed, ["read_text_file"]);

    let next = l.stored_calls(id, &["notes.txt"]);
    let pending = l.rt.block_on(l.tools.pending(&l.settings(id), &l.messages(id)));
    assert!(pending[0].always_allowed, "{pending:?}");
    assert_eq!(l.decide(id, &next[0].id, ToolDecision::Auto).unwrap().content, "The launch code is 0451.\n");

    l.tools.revoke(&l.server_id, "read_text_file").unwrap();
    let last = l.stored_calls(id, &["notes.txt"]);
    let pending = l.rt.block_on(l.tools.pending(&l.settings(id), &l.messages(id)));
    assert!(!pending[0].always_allowed);
    assert!(l.decide(id, &last[0].id, ToolDecision::Auto).unwrap_err().contains("needs the user's permission"));
    // A conversation without the server cannot run its calls, only deny them.
    let other = l.conversation(&SamplingSettings { tool_servers: Vec::new(), ..with_tools("", ToolUse::Auto, 16) });
    let orphan = l.stored_calls(other, &["notes.txt"]);
    let err = l.decide(other, &orphan[0].id, ToolDecision::Allow).unwrap_err();
    assert!(err.contains("can only be denied"), "{err}");
}

#[test]
fn stop_during_a_call_saves_it_as_stopped_at_once() {
    let Some(bin) = servers_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(setup(dir.path(), &bin));
    let input = stdio_input("Everything", bin.join("mcp-server-everything"), vec!["stdio".into()]);
    let everything = l.tools.save(input).unwrap();
    let id = l.conversation(&with_tools(&everything.id, ToolUse::Auto, 16));
    l.store.lock().unwrap().add_user_message(id, "Take your time").unwrap();
    let call = ToolCall {
        id: "call_1_0".into(),
        tool: "trigger-long-running-operation".into(),
        index: 1,
        arguments: r#"{"duration": 30, "steps": 3}"#.into(),
    };
    l.store.lock().unwrap().add_assistant_message(id, &calling(vec![call])).unwrap();
    let running = {
        let l = l.clone();
        std::thread::spawn(move || l.decide(id, "call_1_0", ToolDecision::Allow))
    };
    let began = Instant::now();
    while !l.tools.stop(id) {
        assert!(began.elapsed() < Duration::from_secs(60), "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped_at = Instant::now();
    let saved = running.join().unwrap().unwrap();
    assert!(stopped_at.elapsed() < Duration::from_secs(5), "Stop took {:?}", stopped_at.elapsed());
    assert_eq!((saved.role, saved.status), (Role::Tool, MessageStatus::Stopped));
    assert!(saved.content.contains("was stopped by the user"), "{}", saved.content);
    assert!(!l.tools.stop(id), "nothing runs after it");
}
