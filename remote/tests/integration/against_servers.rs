//! The remote client against real servers on 127.0.0.1: the project's own OpenAI-compatible
//! server (`k3 serve`'s library, over the tiny fixture model) and raw TCP servers that
//! misbehave on purpose (die mid-stream, answer 404 / 429 / 503, or nothing at all).
//! Checked: a streamed greedy reply equals the local engine's for the same conversation; a
//! cancel mid-stream stops the server's engine; a wrong key is the 401 message and the key
//! appears in no error; a body cut mid-reply is an error keeping the partial text.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use k3_engine::chat::ChatMode;
use k3_engine::{DecodeMode, EngineOptions, GenerateParams, Sampling};
use k3_remote::{
    ChatRequest, Endpoint, FinishReason, Outcome, RemoteChat, RemoteClient, RemoteError, StreamError, Timeouts,
    WireMessage,
};
use k3_runtime::{Activity, ChatTurn, JobId, ModelRequest, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime};
use k3_server::{Server, ServerConfig, ServerHandle};

const KEY: &str = "sk-test-4f1d9a7c";

fn tiny_runtime() -> Arc<Runtime> {
    let runtime = Arc::new(Runtime::start().expect("runtime"));
    let options = EngineOptions::resident(k3_tests::fixture("tiny-mxfp4"), Some(1));
    runtime.open_model(ModelRequest { options, is_demo: false }).expect("open the tiny model");
    runtime
}

fn serve() -> (Arc<Runtime>, ServerHandle) {
    let runtime = tiny_runtime();
    let config = ServerConfig { port: 0, api_key: Some(KEY.into()), ..ServerConfig::default() };
    let handle = Server::start(runtime.clone(), config).expect("server starts");
    (runtime, handle)
}

fn client(base_url: String, key: Option<&str>) -> RemoteClient {
    let timeouts = Timeouts { retry_backoff: Duration::from_millis(10), ..Timeouts::default() };
    RemoteClient::new(Endpoint { base_url, api_key: key.map(String::from) }, timeouts).expect("client")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build().expect("tokio").block_on(f)
}

fn ask(text: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: "tiny-mxfp4".into(),
        messages: vec![WireMessage { role: "user", content: text.into() }],
        max_tokens,
        temperature: 0.0,
        top_p: 1.0,
        seed: None,
    }
}

/// The local engine's greedy reply to one user message (what the window would show).
fn local_reply(text: &str, max_tokens: usize) -> k3_runtime::FinishedReply {
    struct One(Option<ChatTurn>, mpsc::Sender<ReplyOutcome>);
    impl ReplyHandler for One {
        fn queued(&mut self, _: JobId, _: usize) {}
        fn begin(&mut self, _: JobId) -> Option<ChatTurn> {
            self.0.take()
        }
        fn progress(&mut self, _: JobId, _: ReplyProgress) {}
        fn end(&mut self, _: JobId, outcome: ReplyOutcome) {
            let _ = self.1.send(outcome);
        }
    }
    let runtime = tiny_runtime();
    let params = GenerateParams {
        max_new_tokens: max_tokens,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let turn = ChatTurn {
        conversation: k3_runtime::ConversationKey::History(1),
        system: None,
        mode: ChatMode::Instruct,
        history: vec![],
        input: k3_engine::chat::TurnInput::user(text),
        params,
        state_file: None,
    };
    let (tx, rx) = mpsc::channel();
    runtime.reply(Box::new(One(Some(turn), tx)));
    match rx.recv_timeout(Duration::from_secs(120)).expect("the local reply ends") {
        ReplyOutcome::Finished(f) => *f,
        other => panic!("local reply: {other:?}"),
    }
}

#[test]
fn a_streamed_reply_equals_the_local_engines_greedy_reply() {
    let (_runtime, server) = serve();
    let remote = client(format!("http://{}/v1", server.local_addr()), Some(KEY));
    assert_eq!(block_on(remote.models()).expect("models"), ["tiny-mxfp4"]);
    let mut deltas = 0;
    let outcome = block_on(remote.chat(&ask("Hello there", 24), || false, |_| deltas += 1)).expect("chat");
    let Outcome::Finished(reply) = outcome else { panic!("not cancelled") };
    let local = local_reply("Hello there", 24);
    assert_eq!(reply.content, local.text, "the same conversation, greedy, gives the same text");
    let usage = reply.usage.expect("the server's usage");
    assert_eq!(usage.completion_tokens as usize, local.figures.output_tokens);
    assert!(deltas > 1, "the reply streamed in {deltas} deltas");
    assert!(matches!(reply.finish, FinishReason::Length | FinishReason::Stop));
}

#[test]
fn a_cancel_mid_stream_stops_the_servers_generation() {
    let (runtime, server) = serve();
    let remote = client(format!("http://{}/v1", server.local_addr()), Some(KEY));
    let stop = AtomicBool::new(false);
    let mut stopped_at = None;
    let outcome = block_on(remote.chat(
        &ask("Say something long", 4000),
        || stop.load(Ordering::Relaxed),
        |_| {
            if !stop.swap(true, Ordering::Relaxed) {
                stopped_at = Some(Instant::now());
            }
        },
    ))
    .expect("chat");
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    let stopped_at = stopped_at.expect("a delta arrived");
    while !matches!(runtime.probe().snapshot().activity, Activity::Idle) {
        assert!(stopped_at.elapsed() < Duration::from_secs(2), "the server's engine still generates");
        std::thread::sleep(Duration::from_millis(2));
    }
    let latency = stopped_at.elapsed();
    assert!(latency < Duration::from_millis(500), "the engine stopped {latency:?} after the cancel");
}

#[test]
fn a_wrong_key_is_the_401_message_and_no_error_carries_a_key() {
    let (_runtime, server) = serve();
    let wrong = "sk-wrong-77c0e2";
    let remote = client(format!("http://{}/v1", server.local_addr()), Some(wrong));
    let e = block_on(remote.chat(&ask("Hi", 4), || false, |_| {})).expect_err("refused");
    assert!(matches!(e, RemoteError::Unauthorized { status: 401, .. }), "{e:?}");
    let text = format!("{e} {e:?} {:?}", remote_debug(&server, wrong));
    assert!(text.contains("refused the API key"), "{text}");
    assert!(!text.contains(wrong) && !text.contains(KEY), "a key in an error: {text}");
}

fn remote_debug(server: &ServerHandle, key: &str) -> String {
    format!("{:?}", Endpoint { base_url: format!("http://{}/v1", server.local_addr()), api_key: Some(key.into()) })
}

/// A raw server that answers the first connection with `answer` and closes it.
fn raw_server(answer: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        if let Ok((mut conn, _)) = listener.accept() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            // Read the body too: closing with unread bytes would reset the connection
            // instead of ending it (that case is the transport error of tests/streams.rs).
            let mut body = vec![0u8; content_length(&head)];
            let _ = conn.read_exact(&mut body);
            let _ = conn.write_all(answer);
        }
    });
    format!("http://{addr}/v1")
}

fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0)
}

#[test]
fn a_server_that_dies_mid_stream_is_an_error_with_the_partial_reply() {
    let url = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half a\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" reply\"}}]}\n\n",
    );
    let e = block_on(client(url, None).chat(&ask("Hi", 8), || false, |_| {})).expect_err("cut");
    match e {
        RemoteError::Stream { failure, .. } => {
            assert_eq!(failure.error, StreamError::EndedEarly);
            assert_eq!(failure.partial.content, "Half a reply");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn statuses_become_the_windows_messages() {
    let not_found = raw_server(b"HTTP/1.1 404 Not Found\r\nContent-Length: 52\r\nConnection: close\r\n\r\n{\"error\":{\"message\":\"The model `x` does not exist\"}}");
    let e = block_on(client(not_found, None).chat(&ask("Hi", 1), || false, |_| {})).expect_err("404");
    assert!(e.to_string().contains("check the base URL") && e.to_string().contains("does not exist"), "{e}");
    let limited = raw_server(
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    let e = block_on(client(limited, None).chat(&ask("Hi", 1), || false, |_| {})).expect_err("429");
    assert!(matches!(e, RemoteError::RateLimited { retry_after: Some(7), .. }), "{e:?}");
    assert!(e.to_string().contains("try again in 7 s"), "{e}");
    let failing =
        raw_server(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 11\r\nConnection: close\r\n\r\nover capacity");
    let e = block_on(client(failing, None).chat(&ask("Hi", 1), || false, |_| {})).expect_err("503");
    assert!(matches!(e, RemoteError::Status { status: 503, .. }) && e.to_string().contains("over capa"), "{e}");
}

#[test]
fn nothing_listening_is_unreachable_after_the_retries() {
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let e = block_on(client(format!("http://127.0.0.1:{port}/v1"), None).models()).expect_err("nobody there");
    assert!(matches!(e, RemoteError::Unreachable { attempts: 4, .. }), "{e:?}");
    let e = RemoteClient::new(Endpoint { base_url: "ftp://example.com/v1".into(), api_key: None }, Timeouts::default())
        .err();
    assert!(matches!(e, Some(RemoteError::BadUrl { .. })), "{e:?}");
}

/// What a reply handler heard, in order.
#[derive(Debug)]
enum Heard {
    Queued(usize),
    Text(String),
    End(ReplyOutcome),
}

/// A handler answering `turn` and reporting everything it hears.
struct Reporting(Option<ChatTurn>, mpsc::Sender<Heard>);

impl ReplyHandler for Reporting {
    fn queued(&mut self, _: JobId, position: usize) {
        let _ = self.1.send(Heard::Queued(position));
    }
    fn begin(&mut self, _: JobId) -> Option<ChatTurn> {
        self.0.take()
    }
    fn progress(&mut self, _: JobId, progress: ReplyProgress) {
        if let ReplyProgress::Text { text, .. } = progress {
            let _ = self.1.send(Heard::Text(text));
        }
    }
    fn end(&mut self, _: JobId, outcome: ReplyOutcome) {
        let _ = self.1.send(Heard::End(outcome));
    }
}

fn turn(text: &str, max_tokens: usize) -> ChatTurn {
    let params = GenerateParams {
        max_new_tokens: max_tokens,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    ChatTurn {
        conversation: k3_runtime::ConversationKey::History(7),
        system: None,
        mode: ChatMode::Instruct,
        history: vec![],
        input: k3_engine::chat::TurnInput::user(text),
        params,
        state_file: None,
    }
}

fn remote_backend(base_url: String, key: Option<&str>) -> Arc<RemoteChat> {
    let timeouts = Timeouts { retry_backoff: Duration::from_millis(10), ..Timeouts::default() };
    let endpoint = Endpoint { base_url, api_key: key.map(String::from) };
    Arc::new(RemoteChat::new(endpoint, "tiny-mxfp4".into(), timeouts).expect("backend"))
}

/// Everything heard until the end, the streamed text joined.
fn until_end(rx: &mpsc::Receiver<Heard>) -> (Vec<usize>, String, ReplyOutcome) {
    let (mut queued, mut streamed) = (Vec::new(), String::new());
    loop {
        match rx.recv_timeout(Duration::from_secs(120)).expect("the reply ends") {
            Heard::Queued(p) => queued.push(p),
            Heard::Text(t) => streamed.push_str(&t),
            Heard::End(outcome) => return (queued, streamed, outcome),
        }
    }
}

#[test]
fn a_remote_reply_through_the_runtime_is_the_local_reply_with_remote_figures() {
    let (_server_runtime, server) = serve();
    // The asking side has no model at all: a remote reply does not touch the local engine.
    let asking = Runtime::start().expect("runtime");
    let backend = remote_backend(format!("http://{}/v1", server.local_addr()), Some(KEY));
    let (tx, rx) = mpsc::channel();
    asking.reply_remote(backend, Box::new(Reporting(Some(turn("Hello there", 24)), tx)));
    let (queued, streamed, outcome) = until_end(&rx);
    let ReplyOutcome::Finished(reply) = outcome else { panic!("{outcome:?}") };
    let local = local_reply("Hello there", 24);
    assert_eq!(queued, [0], "a remote reply waits behind no local job");
    assert_eq!(reply.text, local.text);
    assert_eq!(streamed, local.text, "the streamed pieces are the reply");
    assert_eq!(reply.remote_host.as_deref(), Some(server.local_addr().to_string().as_str()));
    let f = &reply.figures;
    assert_eq!(f.output_tokens, local.figures.output_tokens, "the server's usage");
    assert_eq!((f.io_share, f.true_hit_rate, f.bytes_read), (None, None, 0), "no figures a remote does not have");
    assert!(f.seconds_per_token.is_some() && f.time_to_first_token <= f.total);
}

#[test]
fn a_remote_reply_cancelled_through_the_runtime_stops_the_servers_engine() {
    let (server_runtime, server) = serve();
    let asking = Runtime::start().expect("runtime");
    let backend = remote_backend(format!("http://{}/v1", server.local_addr()), Some(KEY));
    let (tx, rx) = mpsc::channel();
    let id = asking.reply_remote(backend, Box::new(Reporting(Some(turn("Say something long", 4000)), tx)));
    while !matches!(rx.recv_timeout(Duration::from_secs(60)).expect("heard"), Heard::Text(_)) {}
    assert!(asking.cancel(id), "the running remote reply is live");
    let (_, _, outcome) = until_end(&rx);
    let ReplyOutcome::Finished(reply) = outcome else { panic!("{outcome:?}") };
    assert_eq!(reply.finish, k3_engine::FinishReason::Cancelled);
    assert!(!asking.cancel(id), "nothing is left to cancel after the end");
    let stopped = Instant::now();
    while !matches!(server_runtime.probe().snapshot().activity, Activity::Idle) {
        assert!(stopped.elapsed() < Duration::from_secs(2), "the server's engine still generates");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_remote_reply_cut_mid_stream_fails_with_its_partial_and_the_reason() {
    let url = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half a\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" reply\"}}]}\n\n",
    );
    let asking = Runtime::start().expect("runtime");
    let (tx, rx) = mpsc::channel();
    asking.reply_remote(remote_backend(url.clone(), None), Box::new(Reporting(Some(turn("Hi", 8)), tx)));
    let (_, streamed, outcome) = until_end(&rx);
    let ReplyOutcome::Failed { error, partial_text } = outcome else { panic!("{outcome:?}") };
    assert_eq!((streamed.as_str(), partial_text.as_deref()), ("Half a reply", Some("Half a reply")));
    let message = error.to_string();
    assert!(message.contains(&url) && message.contains("ended"), "{message}");
}
