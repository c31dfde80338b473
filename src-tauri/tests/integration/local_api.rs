//! Settings › Local API end to end: the toggle starts and stops a real server on loopback
//! over the app's own runtime (through IPC, as the window calls it), a taken port is
//! reported with the next free one and never switched to, the choice survives a restart,
//! and a chat in the window while an API request generates queues behind it instead of
//! failing.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tauri::Manager;

use k3_app::history::{FinishReason, MessageStatus, SamplingSettings};
use k3_app::local_api::ApiSettings;
use k3_app::reply_event::ReplyEvent;
use k3_app::worker::JobKind;
use k3_desktop::state::AppState;
use k3_runtime::Activity;
use k3_tests::http::{get, post_json};

use crate::common;
use common::{app, options, MockApp as App};

fn invoke(app: &App, cmd: &str, body: Value) -> Value {
    common::invoke(&app.1, cmd, body).unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn settings(port: u16) -> Value {
    json!({"enabled": true, "port": port, "apiKey": "", "lan": false, "lanAddress": ""})
}

#[test]
fn the_toggle_starts_and_stops_the_server_and_the_choice_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    {
        let app = app(dir.path());
        let model = invoke(&app, "current_model", json!({}));
        let name = model["model"]["name"].as_str().expect("the demo model loads").to_string();
        let off = invoke(&app, "api_status", json!({}));
        assert_eq!(off["running"], json!(false));
        assert_eq!(off["settings"]["enabled"], json!(false), "off by default");
        assert_eq!(off["settings"]["port"], json!(8000), "port 8000 by default");

        let on = invoke(&app, "api_start", json!({"settings": settings(port)}));
        assert_eq!(on["running"], json!(true), "{on}");
        assert_eq!(on["baseUrl"], json!(format!("http://127.0.0.1:{port}/v1")));
        assert_eq!(on["problem"], Value::Null);
        let health = get(addr(port), "/health");
        assert_eq!(health.status, 200);
        let models = get(addr(port), "/v1/models").json();
        assert_eq!(
            models["data"][0]["id"],
            json!(k3_server::registry::model_id(&name)),
            "the window's model: {models}"
        );

        let status = invoke(&app, "api_status", json!({}));
        assert_eq!(status["requests"], json!(2));
        let paths: Vec<&str> = status["log"].as_array().unwrap().iter().map(|l| l["path"].as_str().unwrap()).collect();
        assert_eq!(paths, vec!["/health", "/v1/models"], "the request log shows each request");
        app.0.state::<AppState>().local_api.shutdown(); // what quitting the app does (RunEvent::Exit)
        assert!(TcpStream::connect(addr(port)).is_err(), "nothing listens after quitting");
    }
    // The app closed with the API on: it is on again at the next start, on the same port.
    {
        let app = app(dir.path());
        let status = invoke(&app, "api_status", json!({}));
        assert_eq!(status["running"], json!(true), "{status}");
        assert_eq!(get(addr(port), "/health").status, 200);

        let off = invoke(&app, "api_stop", json!({}));
        assert_eq!(off["running"], json!(false));
        assert!(TcpStream::connect(addr(port)).is_err(), "nothing listens once stopped");
    }
    let app = app(dir.path());
    assert_eq!(invoke(&app, "api_status", json!({}))["running"], json!(false), "off stays off");
}

#[test]
fn a_taken_port_is_reported_with_the_next_free_one_and_never_switched_to() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let status = invoke(&app, "api_start", json!({"settings": settings(port)}));
    assert_eq!(status["running"], json!(false));
    assert_eq!(status["settings"]["enabled"], json!(false), "not saved as on");
    assert_eq!(status["problem"]["kind"], json!("portTaken"), "{status}");
    assert_eq!(status["problem"]["port"], json!(port));
    let next = status["problem"]["nextFree"].as_u64().expect("a free port is offered") as u16;
    assert!(next > port);
    assert!(TcpStream::connect(addr(next)).is_err(), "the offered port is not taken silently");

    let lan = json!({"enabled": true, "port": next, "apiKey": "", "lan": true, "lanAddress": "192.168.1.20"});
    let refused = invoke(&app, "api_start", json!({"settings": lan}));
    assert_eq!(refused["problem"]["kind"], json!("lanNeedsKey"), "{refused}");
    let everywhere = json!({"enabled": true, "port": next, "apiKey": "k", "lan": true, "lanAddress": "0.0.0.0"});
    let refused = invoke(&app, "api_start", json!({"settings": everywhere}));
    assert_eq!(refused["problem"]["kind"], json!("badAddress"), "{refused}");
    assert!(TcpStream::connect(addr(next)).is_err());
}

/// Waits (≤ 10 s) until the engine generates.
fn wait_generating(state: &AppState) {
    let start = Instant::now();
    while !matches!(state.worker.probe().snapshot().activity, Activity::Generating { .. }) {
        assert!(start.elapsed() < Duration::from_secs(10), "the API request never started generating");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_chat_in_the_window_queues_behind_a_busy_server_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let state = AppState::start(&options(dir.path()), dir.path(), None).unwrap();
    let name = state.worker.status().model.expect("the demo model loads").name;
    let model = k3_server::registry::model_id(&name);
    let port = free_port();
    let on = state.local_api.start(ApiSettings { port, enabled: true, ..ApiSettings::default() }).unwrap();
    assert!(on.running, "{on:?}");

    let api = std::thread::spawn(move || {
        let body = format!(r#"{{"model":"{model}","prompt":"Once upon a time","max_tokens":400,"temperature":0}}"#);
        post_json(addr(port), "/v1/completions", &body)
    });
    wait_generating(&state);

    let s = SamplingSettings { temperature: 0.0, top_p: 1.0, seed: 0, max_tokens: 8, ..SamplingSettings::default() };
    let id = {
        let store = state.history().unwrap();
        let c = store.create(&s).unwrap();
        store.update(c.id, "while the API runs", "", &s).unwrap();
        c.id
    };
    let (tx, rx) = mpsc::channel();
    state
        .worker
        .generate(
            id,
            JobKind::Send { text: "Hello".into() },
            Box::new(move |e| drop(tx.send(e))),
            (&state.backends, k3_app::worker::LocalReply::serial()),
        )
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(10)).unwrap() {
        ReplyEvent::Queued { position, .. } => assert_eq!(position, 1, "one reply ahead: the running API job"),
        other => panic!("expected queued, got {other:?}"),
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        matches!(state.worker.probe().snapshot().activity, Activity::Generating { .. }) && rx.try_recv().is_err(),
        "the API's generation still runs and the chat waits (neither preempted nor failed)"
    );

    let answer = api.join().unwrap();
    assert_eq!(answer.status, 200);
    let completion = answer.json();
    let finish = completion["choices"][0]["finish_reason"].as_str().unwrap().to_string();
    let generated = completion["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(finish == "length" && generated == 400 || finish == "stop", "the API's reply ran whole: {completion}");

    let mut last = None;
    while let Ok(e) = rx.recv_timeout(Duration::from_secs(30)) {
        let end = matches!(e, ReplyEvent::Finished { .. } | ReplyEvent::Failed { .. });
        last = Some(e);
        if end {
            break;
        }
    }
    match last {
        Some(ReplyEvent::Finished { reason, message, .. }) => {
            assert!(matches!(reason, FinishReason::Length | FinishReason::Stop));
            assert_eq!(message.status, MessageStatus::Complete);
            assert!(!message.content.is_empty());
        }
        other => panic!("the queued chat must finish after the API's reply, got {other:?}"),
    }
}
