//! Generations through the library server (RELIABILITY §2.5 AP-06…08, AP-12, AP-13):
//! malformed bodies, the bounded queue's 429, and a client that leaves cancelling its
//! engine job within 250 ms — measured from the socket's close to the engine idle, and
//! by the server's own stat.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k3_runtime::{Activity, Runtime};
use k3_server::ServerConfig;
use k3_tests::http::{get, post_json, request, send};

const MODEL: &str = "tiny-mxfp4";

fn idle(runtime: &Runtime) -> bool {
    matches!(runtime.probe().snapshot().activity, Activity::Idle)
}

/// Waits (≤ 5 s) until the engine is generating.
fn wait_generating(runtime: &Runtime) {
    let start = Instant::now();
    while !matches!(runtime.probe().snapshot().activity, Activity::Generating { .. }) {
        assert!(start.elapsed() < Duration::from_secs(5), "the engine never started generating");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Time from now until the engine is idle (polled every millisecond, ≤ 5 s).
fn until_idle(runtime: &Runtime) -> Duration {
    let start = Instant::now();
    while !idle(runtime) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    start.elapsed()
}

/// Opens a long raw completion (streamed or not) and returns the connection.
fn long_completion(addr: SocketAddr, stream: bool) -> TcpStream {
    let body = format!(
        r#"{{"model":"{MODEL}","prompt":"Once upon a time","max_tokens":4000,"temperature":0,"stream":{stream}}}"#
    );
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.write_all(&request(addr, "POST", "/v1/completions", &["Content-Type: application/json"], &body))
        .expect("write");
    conn
}

/// Reads until `n` bytes of the answer arrived.
fn read_some(conn: &mut TcpStream, n: usize) {
    conn.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut got = 0;
    let mut buf = [0u8; 4096];
    while got < n {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => panic!("the stream ended after {got} bytes"),
            Ok(k) => got += k,
        }
    }
}

#[test]
fn a_client_that_leaves_cancels_its_generation_within_250_ms() {
    let (runtime, server) = common::start(common::config());
    let addr = server.local_addr();
    let mut worst = Duration::ZERO;
    let rounds = 20;
    for round in 0..rounds {
        let streamed = round % 2 == 0;
        let mut conn = long_completion(addr, streamed);
        if streamed {
            read_some(&mut conn, 2048);
        } else {
            wait_generating(&runtime);
        }
        assert!(!idle(&runtime), "round {round}: the generation ended before the client left");
        conn.shutdown(Shutdown::Both).expect("shutdown");
        drop(conn);
        let latency = until_idle(&runtime);
        worst = worst.max(latency);
        assert!(latency <= Duration::from_millis(250), "round {round} (streamed: {streamed}): {latency:?}");
    }
    let stats = server.status().stats;
    assert_eq!(stats.disconnect_cancels, rounds);
    let max = stats.max_cancel_seconds.expect("a cancel latency");
    assert!(max <= 0.25, "server-side cancel latency {max} s");
    eprintln!("cancel on disconnect: worst {worst:?} (socket close → engine idle), server-side max {max:.4} s");
    // The engine serves the next request normally.
    let ok = post_json(addr, "/v1/completions", &format!(r#"{{"model":"{MODEL}","prompt":"Hi","max_tokens":3}}"#));
    assert_eq!(ok.status, 200);
}

#[test]
fn a_full_queue_answers_429_with_retry_after() {
    let config = ServerConfig { queue_capacity: 1, retry_after_seconds: 7, ..common::config() };
    let (runtime, server) = common::start(config);
    let addr = server.local_addr();
    let mut running = long_completion(addr, true);
    read_some(&mut running, 512);
    let mut waiting = long_completion(addr, true);
    read_some(&mut waiting, 10);
    let refused = post_json(addr, "/v1/completions", &format!(r#"{{"model":"{MODEL}","prompt":"Hi","max_tokens":3}}"#));
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), Some("7"));
    assert_eq!(refused.error_code(), "queue_full");
    assert_eq!(server.status().stats.queue_full, 1);
    drop(running);
    drop(waiting);
    let start = Instant::now();
    while server.status().generations_in_flight > 0 {
        assert!(start.elapsed() < Duration::from_secs(2), "slots were not freed");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(until_idle(&runtime) < Duration::from_secs(1));
    let ok = post_json(addr, "/v1/completions", &format!(r#"{{"model":"{MODEL}","prompt":"Hi","max_tokens":3}}"#));
    assert_eq!(ok.status, 200);
}

/// Probe findings: a queued request whose client left kept its place against the queue
/// until the running job ended ("ghosts"), and `/health` then counted a multi-second cancel
/// latency for it. The slot is freed as the client leaves, the job never runs, and its
/// cancel is counted at once; the running job goes on undisturbed.
#[test]
fn a_queued_request_whose_client_leaves_frees_its_place_at_once_and_never_runs() {
    let config = ServerConfig { queue_capacity: 1, ..common::config() };
    let (runtime, server) = common::start(config);
    let addr = server.local_addr();
    let mut running = long_completion(addr, true);
    read_some(&mut running, 512);
    let mut waiting = long_completion(addr, true);
    read_some(&mut waiting, 10);
    assert_eq!(server.status().generations_in_flight, 2);
    waiting.shutdown(Shutdown::Both).expect("close");
    drop(waiting);
    let start = Instant::now();
    while server.status().generations_in_flight > 1 {
        assert!(start.elapsed() < Duration::from_secs(5), "the queued request still holds its place");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(matches!(runtime.probe().snapshot().activity, Activity::Generating { .. }), "the running job goes on");
    let stats = server.status().stats;
    assert_eq!(stats.disconnect_cancels, 1);
    let latency = stats.last_cancel_seconds.expect("a cancel latency");
    assert!(latency < 1.0, "a job that never ran was cancelled in {latency} s");
    // Its place is free while the first still runs: a new request is queued, not refused.
    let mut next = long_completion(addr, true);
    read_some(&mut next, 10);
    assert_eq!(server.status().stats.queue_full, 0, "refused while a place was free");
    drop(running);
    drop(next);
}

/// Probe finding: misspelt and unknown fields (`max_token`, `temprature`) were accepted
/// silently; the answer names them in `x-k3-ignored-fields`, on every endpoint, whether the
/// request succeeds or is refused, and a request of known fields gets no such header.
#[test]
fn ignored_request_fields_are_named_in_a_header() {
    let (_rt, server) = common::start(common::config());
    let addr = server.local_addr();
    let chat = format!(
        r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"x"}}],"max_token":3,"temprature":0.1,"max_tokens":2}}"#
    );
    let answer = post_json(addr, "/v1/chat/completions", &chat);
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.header("x-k3-ignored-fields"), Some("max_token, temprature"));
    let known =
        format!(r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"x"}}],"max_tokens":2,"seed":1}}"#);
    assert_eq!(post_json(addr, "/v1/chat/completions", &known).header("x-k3-ignored-fields"), None);
    let refused = format!(r#"{{"model":"{MODEL}","messages":[],"logprobs":true}}"#);
    let answer = post_json(addr, "/v1/chat/completions", &refused);
    assert_eq!((answer.status, answer.header("x-k3-ignored-fields")), (400, Some("logprobs")));
    let completion = format!(r#"{{"model":"{MODEL}","prompt":"x","max_tokens":1,"best_of":2}}"#);
    assert_eq!(post_json(addr, "/v1/completions", &completion).header("x-k3-ignored-fields"), Some("best_of"));
    let message =
        format!(r#"{{"model":"{MODEL}","max_tokens":1,"messages":[{{"role":"user","content":"x"}}],"top_kk":3}}"#);
    assert_eq!(post_json(addr, "/v1/messages", &message).header("x-k3-ignored-fields"), Some("top_kk"));
}

#[test]
fn malformed_bodies_get_400_404_in_openai_shape() {
    let (_rt, server) = common::start(common::config());
    let addr = server.local_addr();
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let huge_model = format!(r#"{{"model":"{}","messages":[{{"role":"user","content":"x"}}]}}"#, "m".repeat(1 << 20));
    let stops = format!(
        r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"x"}}],"stop":[{}]}}"#,
        vec!["\"s\""; 10_000].join(",")
    );
    let msg = |extra: &str| format!(r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"x"}}]{extra}}}"#);
    let cases: Vec<(&str, String, u16, &str)> = vec![
        ("truncated", r#"{"model":"tiny-mxfp4","messages":[{"role":"#.into(), 400, "invalid_json"),
        ("empty body", String::new(), 400, "invalid_json"),
        ("BOM", format!("\u{feff}{}", msg("")), 400, "invalid_json"),
        ("NaN", msg(r#","temperature":NaN"#), 400, "invalid_json"),
        ("duplicate key", format!(r#"{{"model":"{MODEL}","model":"x","messages":[]}}"#), 400, "invalid_json"),
        ("deep nesting", deep, 400, "invalid_json"),
        ("top-level array", "[1,2]".into(), 400, "invalid_json"),
        ("no messages", format!(r#"{{"model":"{MODEL}"}}"#), 400, "invalid_json"),
        ("messages empty", format!(r#"{{"model":"{MODEL}","messages":[]}}"#), 400, "invalid_value"),
        (
            "unknown role",
            format!(r#"{{"model":"{MODEL}","messages":[{{"role":"wizard","content":"x"}}]}}"#),
            400,
            "invalid_value",
        ),
        ("max_tokens -1", msg(r#","max_tokens":-1"#), 400, "invalid_json"),
        ("max_tokens 1e12", msg(r#","max_tokens":1e12"#), 400, "invalid_json"),
        ("max_tokens \"5\"", msg(r#","max_tokens":"5""#), 400, "invalid_json"),
        ("max_tokens over context", msg(r#","max_tokens":1000000"#), 400, "invalid_value"),
        ("temperature string", msg(r#","temperature":"hot""#), 400, "invalid_json"),
        ("temperature 5", msg(r#","temperature":5"#), 400, "invalid_value"),
        ("top_p 1.5", msg(r#","top_p":1.5"#), 400, "invalid_value"),
        ("n 2", msg(r#","n":2"#), 400, "invalid_value"),
        ("10k stops", stops, 400, "invalid_value"),
        (
            "model path",
            r#"{"model":"../../etc/passwd","messages":[{"role":"user","content":"x"}]}"#.to_string(),
            404,
            "model_not_found",
        ),
        ("model 1 MB", huge_model, 404, "model_not_found"),
        (
            "model unknown",
            r#"{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}"#.into(),
            404,
            "model_not_found",
        ),
    ];
    let mut failures = Vec::new();
    for (name, body, status, code) in &cases {
        let answer = post_json(addr, "/v1/chat/completions", body);
        let got = answer.error_code();
        if answer.status != *status || got != *code {
            failures.push(format!("{name}: got {} {got}, want {status} {code}", answer.status));
        }
    }
    // Bad UTF-8 inside a JSON string.
    let mut bad_utf8 = request(addr, "POST", "/v1/chat/completions", &["Content-Type: application/json"], "");
    let body: &[u8] = b"{\"model\":\"tiny-mxfp4\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}";
    let at = bad_utf8.len() - 4;
    let head = String::from_utf8_lossy(&bad_utf8[..at])
        .replace("Content-Length: 0", &format!("Content-Length: {}", body.len()));
    bad_utf8 = head.into_bytes();
    bad_utf8.extend_from_slice(b"\r\n\r\n");
    bad_utf8.extend_from_slice(body);
    let answer = send(addr, &bad_utf8);
    if answer.status != 400 || answer.error_code() != "invalid_json" {
        failures.push(format!("bad UTF-8: got {}", answer.status));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Unknown routes and methods answer in the same shape.
    let missing = get(addr, "/v1/nothing");
    assert_eq!((missing.status, missing.error_code().as_str()), (404, "not_found"));
    let wrong = get(addr, "/v1/chat/completions");
    assert_eq!((wrong.status, wrong.error_code().as_str()), (405, "method_not_allowed"));
    // A prompt longer than the context: 400 context_length_exceeded, not a 5xx.
    let long = format!(r#"{{"model":"{MODEL}","prompt":"{}","max_tokens":1}}"#, "word ".repeat(5000));
    let answer = post_json(addr, "/v1/completions", &long);
    assert_eq!((answer.status, answer.error_code().as_str()), (400, "context_length_exceeded"));
}

#[test]
fn health_and_the_probe_show_the_servers_generation() {
    let (runtime, server): (Arc<Runtime>, _) = common::start(common::config());
    let addr = server.local_addr();
    let models = get(addr, "/v1/models").json();
    assert_eq!(models["data"][0]["id"], MODEL);
    let mut conn = long_completion(addr, true);
    read_some(&mut conn, 512);
    // The probe of the runtime the server was given shows the server's job.
    assert!(matches!(runtime.probe().snapshot().activity, Activity::Generating { .. }));
    let health = get(addr, "/health").json();
    assert_eq!(health["activity"], "generating");
    assert_eq!(health["generations_in_flight"], 1);
}
