//! The app's contract with its UI and with Tauri's permission system:
//! generated TypeScript is fresh, the capability file grants exactly the registered
//! commands, every registered command answers through IPC, and the wire shape of events,
//! DTOs and errors is what the UI's types say.

use std::path::{Path, PathBuf};

use k3_desktop::ipc::bindings::{render_typescript, BINDINGS_PATH};
use k3_desktop::ipc::dto::{FinishReason, SamplingSettings};
use k3_desktop::ipc::error::{ErrorCode, IpcError};
use k3_desktop::ipc::events::{channel_emitter, GenerationEvent};
use k3_desktop::COMMANDS;

use crate::common;
use common::{app, invoke};
use serde_json::{json, Value};
use tauri::ipc::{Channel, InvokeResponseBody};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn generated_typescript_is_fresh() {
    let path = workspace().join(BINDINGS_PATH);
    let want = render_typescript();
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale: regenerate it with `UPDATE_BINDINGS=1 cargo test -p k3-desktop --test contract`",
        path.display()
    );
    for name in ["IpcError", "ModelInfo", "Conversation", "Message", "MessageStats", "GenerationEvent"] {
        assert!(want.contains(&format!("export type {name} = ")), "{name} missing from the bindings");
    }
}

#[test]
fn the_capability_grants_exactly_the_registered_commands() {
    let text = std::fs::read_to_string(workspace().join("src-tauri/capabilities/default.json")).unwrap();
    let cap: Value = serde_json::from_str(&text).unwrap();
    let granted: Vec<String> = cap["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_str())
        .filter(|p| p.starts_with("allow-"))
        .map(|p| p.trim_start_matches("allow-").replace('-', "_"))
        .collect();
    let mut want: Vec<String> = COMMANDS.iter().map(|c| c.to_string()).collect();
    let mut got = granted.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want, "capabilities/default.json and command_names.rs disagree");
    let others: Vec<&str> = cap["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_str())
        .filter(|p| !p.starts_with("allow-"))
        .collect();
    assert_eq!(others, vec!["core:default"], "only the core defaults besides our commands");
}

#[test]
fn every_registered_command_answers_and_unknown_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, webview) = app(dir.path());
    let unknown = invoke(&webview, "no_such_command", json!({})).unwrap_err();
    assert!(unknown.to_string().contains("not found"), "{unknown}");
    for &cmd in COMMANDS {
        if cmd == "pick_model_folder" || cmd == "save_export" || cmd == "open_link" {
            continue; // these open native dialogs; their registration is checked below
        }
        // With no arguments a command either answers or refuses its arguments; it is never "not found".
        if let Err(e) = invoke(&webview, cmd, json!({})) {
            assert!(!e.to_string().contains("not found"), "{cmd}: {e}");
        }
    }
    // A link that must not leave the app is refused before anything is opened.
    let e = invoke(&webview, "open_link", json!({"url": "javascript:alert(1)"})).unwrap_err();
    assert_eq!(e["code"], json!("INVALID_ARGUMENT"), "{e}");
    // Arguments the dialogs never reach: the command exists and rejects them.
    let e = invoke(&webview, "save_export", json!({"id": "x"})).unwrap_err();
    assert!(e.to_string().contains("invalid") || e.to_string().contains("id"), "save_export: {e}");
}

#[test]
fn thread_counts_are_checked_saved_and_reopen_the_model_through_ipc() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, webview) = app(dir.path());
    invoke(&webview, "current_model", json!({})).unwrap();
    let view = invoke(&webview, "performance_settings", json!({})).unwrap();
    let cores = view["cores"].as_u64().unwrap();
    assert_eq!(view["saved"], json!({"compute": null, "io": null}));
    assert_eq!(view["inUse"]["compute"].as_u64(), Some(cores), "every core by default: {view}");
    assert_eq!(view["inUse"]["io"], json!(4));
    assert_eq!(view["speedTestDir"], Value::Null, "the demo has no drive to measure");

    let e = invoke(&webview, "apply_performance", json!({"threads": {"compute": cores + 1, "io": null}})).unwrap_err();
    assert_eq!(e["code"], json!("INVALID_ARGUMENT"), "{e}");
    assert!(!dir.path().join("performance.json").exists(), "a refused choice is not saved");

    let model = invoke(&webview, "apply_performance", json!({"threads": {"compute": 1, "io": 2}})).unwrap();
    assert!(model["isDemo"].as_bool().unwrap(), "{model}");
    let view = invoke(&webview, "performance_settings", json!({})).unwrap();
    assert_eq!(view["saved"], json!({"compute": 1, "io": 2}));
    assert_eq!((view["inUse"]["compute"].clone(), view["inUse"]["io"].clone()), (json!(1), json!(2)), "{view}");
    let saved = std::fs::read_to_string(dir.path().join("performance.json")).unwrap();
    assert!(saved.contains("\"io\": 2"), "{saved}");
    let report = invoke(&webview, "diagnostics", json!({})).unwrap();
    assert!(report.as_str().unwrap().contains("threads: 1 compute, 2 expert reads"), "{report}");

    // Speculative decoding: off until chosen, bounded, saved in its own file, no reopen.
    assert_eq!((view["speculation"].clone(), view["maxDraft"].clone()), (json!({"maxDraft": 0}), json!(32)));
    let e = invoke(&webview, "set_speculation", json!({"choice": {"maxDraft": 33}})).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("33 draft tokens"), "{e}");
    assert!(!dir.path().join("speculation.json").exists(), "a refused choice is not saved");
    invoke(&webview, "set_speculation", json!({"choice": {"maxDraft": 4}})).unwrap();
    let view = invoke(&webview, "performance_settings", json!({})).unwrap();
    assert_eq!(view["speculation"], json!({"maxDraft": 4}));
    assert_eq!(view["inUse"]["compute"], json!(1), "the model was not reopened: {view}");

    // Resume after a restart: 4 conversations by default, at most 64, saved in resume.json.
    assert_eq!((view["resume"].clone(), view["maxKeep"].clone()), (json!({"keep": 4}), json!(64)));
    assert_eq!(view["savedStates"], json!({"count": 0, "bytes": 0}));
    let e = invoke(&webview, "set_resume", json!({"choice": {"keep": 65}})).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("65 is more than 64"), "{e}");
    invoke(&webview, "set_resume", json!({"choice": {"keep": 1}})).unwrap();
    let view = invoke(&webview, "performance_settings", json!({})).unwrap();
    assert_eq!(view["resume"], json!({"keep": 1}));

    // No log written yet (the log plugin runs in the app, not here): an empty log at the data folder's path.
    let log = invoke(&webview, "read_log", json!({"lines": 50})).unwrap();
    assert_eq!(log["lines"], json!([]));
    assert!(log["path"].as_str().unwrap().ends_with("logs/k3-desktop.log"), "{log}");
}

#[test]
fn conversation_commands_round_trip_through_ipc() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, webview) = app(dir.path());
    let status = invoke(&webview, "current_model", json!({})).unwrap();
    assert_eq!(status["model"]["isDemo"], json!(true), "{status}");
    assert_eq!(status["model"]["layers"], json!(8));
    let created = invoke(&webview, "create_conversation", json!({})).unwrap();
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["title"], json!("New chat"));
    assert_eq!(created["messages"], json!([]));
    let settings =
        json!({"temperature": 0.0, "topP": 1.0, "seed": 7, "maxTokens": 9, "thinking": true, "thinkingEffort": "high"});
    let updated = invoke(
        &webview,
        "update_conversation",
        json!({"id": id, "title": "Renamed", "systemPrompt": "Be brief.", "settings": settings}),
    )
    .unwrap();
    assert_eq!(updated["systemPrompt"], json!("Be brief."));
    // Settings without the tool fields (a window older than tools) take their defaults.
    let mut expected = settings.clone();
    expected["toolServers"] = json!([]);
    expected["toolsOff"] = json!([]);
    expected["toolChoice"] = json!("auto");
    assert_eq!(updated["settings"], expected);
    let bad = json!({"temperature": -1.0, "topP": 1.0, "seed": 7, "maxTokens": 9, "thinking": false});
    let refused =
        invoke(&webview, "update_conversation", json!({"id": id, "title": "x", "systemPrompt": "", "settings": bad}))
            .unwrap_err();
    assert_eq!(refused["code"], json!("INVALID_ARGUMENT"), "{refused}");
    let list = invoke(&webview, "list_conversations", json!({})).unwrap();
    assert_eq!(list[0]["title"], json!("Renamed"));
    let md = invoke(&webview, "export_conversation", json!({"id": id, "format": "markdown"})).unwrap();
    assert_eq!(md["fileName"], json!("renamed.md"));
    assert!(md["content"].as_str().unwrap().starts_with("# Renamed\n"));
    let missing = invoke(&webview, "get_conversation", json!({"id": 999})).unwrap_err();
    assert_eq!(missing, json!({"code": "NOT_FOUND", "message": "conversation 999 does not exist", "details": null}));
    let opened = invoke(&webview, "open_model", json!({"path": "/nonexistent/k3"})).unwrap_err();
    assert_eq!(opened["code"], json!("MODEL_FOLDER"));
    assert!(opened["message"].as_str().unwrap().contains("/nonexistent/k3"));
    invoke(&webview, "delete_conversation", json!({"id": id})).unwrap();
    assert_eq!(invoke(&webview, "list_conversations", json!({})).unwrap(), json!([]));
    assert_eq!(invoke(&webview, "cancel_generation", json!({"jobId": 12345})).unwrap(), json!(false));
}

#[test]
fn events_and_errors_have_the_wire_shape_the_ui_expects() {
    let e = GenerationEvent::PrefillProgress { job_id: 3, done: 64, total: 150 };
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"type": "prefillProgress", "jobId": 3, "done": 64, "total": 150})
    );
    let e = GenerationEvent::Token { job_id: 3, index: 0, text: "Hi".into(), think: false };
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"type": "token", "jobId": 3, "index": 0, "text": "Hi", "think": false})
    );
    let err = IpcError::new(ErrorCode::ExpertRead, "reading layer 2 expert 5 failed");
    assert_eq!(
        serde_json::to_value(&err).unwrap(),
        json!({"code": "EXPERT_READ", "message": "reading layer 2 expert 5 failed", "details": null})
    );
    assert_eq!(serde_json::to_value(FinishReason::Cancelled).unwrap(), json!("cancelled"));
    let s: SamplingSettings =
        serde_json::from_value(json!({"temperature": 0.5, "topP": 0.9, "seed": 1, "maxTokens": 4, "thinking": true}))
            .unwrap();
    assert_eq!(s.top_p, 0.9);
    // Unknown engine errors still carry the engine's message.
    let engine = k3_engine::Error::MissingTensor { name: "model.layers.3.mlp.gate.weight".into() };
    let mapped = IpcError::from(engine);
    assert_eq!(mapped.code, ErrorCode::Checkpoint);
    assert!(mapped.message.contains("model.layers.3.mlp.gate.weight"));
}

#[test]
fn the_channel_emitter_sends_each_event_as_json() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let channel: Channel<GenerationEvent> = Channel::new(move |body| {
        let InvokeResponseBody::Json(text) = body else { panic!("events are JSON") };
        sink.lock().unwrap().push(serde_json::from_str::<Value>(&text).unwrap());
        Ok(())
    });
    let mut emit = channel_emitter(channel);
    emit(k3_app::reply_event::ReplyEvent::Queued { job_id: 9, position: 0 });
    emit(k3_app::reply_event::ReplyEvent::Token { job_id: 9, index: 0, text: "é".into(), think: true });
    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        vec![
            json!({"type": "queued", "jobId": 9, "position": 0}),
            json!({"type": "token", "jobId": 9, "index": 0, "text": "é", "think": true})
        ]
    );
}

#[test]
fn only_https_links_leave_the_app() {
    use k3_desktop::commands::links::checked_link;
    assert_eq!(checked_link("https://example.org/a?b=1").unwrap().as_str(), "https://example.org/a?b=1");
    for bad in
        ["http://example.org", "javascript:alert(1)", "file:///etc/passwd", "https://", "data:text/html,x", "nope"]
    {
        assert_eq!(checked_link(bad).unwrap_err().code, ErrorCode::InvalidArgument, "{bad}");
    }
}

#[test]
fn the_setup_wizard_walks_and_persists_through_ipc() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, webview) = app(dir.path());
    let status = invoke(&webview, "setup_status", json!({})).unwrap();
    assert_eq!(status["wizard"], json!(true), "a fresh install shows the wizard: {status}");
    assert_eq!(status["settings"]["step"], json!("welcome"));
    let next = invoke(&webview, "setup_next", json!({})).unwrap();
    assert_eq!(next["settings"]["step"], json!("hardware"));
    let view = invoke(&webview, "setup_examine", json!({})).unwrap();
    assert!(["green", "amber", "red"].contains(&view["cpu"]["level"].as_str().unwrap()), "{view}");
    assert!(!view["drives"].as_array().unwrap().is_empty(), "{view}");
    // Drives (saved there by an earlier run, so this machine's memory does not decide the
    // test): nothing chosen blocks; a chosen store is saved to setup.json at once.
    drop((_app, webview));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("setup.json"), r#"{"step": "drives"}"#).unwrap();
    let (_app, webview) = app(dir.path());
    let drives = invoke(&webview, "setup_next", json!({})).unwrap();
    assert_eq!(drives["settings"]["step"], json!("drives"));
    assert_eq!(drives["blockers"], json!([{"kind": "noStoreChosen"}]));
    let store = dir.path().join("store");
    let chosen = invoke(&webview, "setup_choose", json!({"choice": {"storeDir": store}})).unwrap();
    assert_eq!(chosen["storeDir"], json!(store));
    let saved: Value = serde_json::from_slice(&std::fs::read(dir.path().join("setup.json")).unwrap()).unwrap();
    assert_eq!(saved["storeDir"], json!(store));
    // Going forward is only through setup_next; back is allowed to earlier screens.
    let e = invoke(&webview, "setup_choose", json!({"choice": {"backTo": "ready"}})).unwrap_err();
    assert_eq!(e["code"], json!("INVALID_ARGUMENT"), "{e}");
    let back = invoke(&webview, "setup_choose", json!({"choice": {"backTo": "welcome"}})).unwrap();
    assert_eq!(back["step"], json!("welcome"));
    let e = invoke(&webview, "setup_forecast", json!({})).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("speed test"), "{e}");
    let e = invoke(&webview, "setup_adopt", json!({"path": "/nonexistent/k3"})).unwrap_err();
    assert_eq!(e["code"], json!("MODEL_FOLDER"));
    let dismissed = invoke(&webview, "setup_dismiss", json!({"dismissed": true})).unwrap();
    assert_eq!(dismissed["wizard"], json!(false), "Try the demo model closes the wizard");
    assert_eq!(invoke(&webview, "setup_pause", json!({})).unwrap(), json!(false));
}

/// A damaged history does not stop the app: it starts on a new history and
/// `history_notice` tells the UI which file was kept aside; a sound start has no notice.
#[test]
fn a_damaged_history_starts_the_app_with_a_notice_naming_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_app, webview) = app(dir.path());
        assert_eq!(invoke(&webview, "history_notice", json!({})).unwrap(), Value::Null);
    }
    let file = dir.path().join(k3_desktop::state::HISTORY_FILE);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&file, &garbage).unwrap();
    let (_app, webview) = app(dir.path());
    let notice = invoke(&webview, "history_notice", json!({})).unwrap();
    assert_eq!(notice["kind"], json!("damaged"), "{notice}");
    assert_eq!(notice["saved"], json!(true));
    let kept = notice["setAside"][0].as_str().unwrap();
    assert!(notice["message"].as_str().unwrap().contains(kept), "{notice}");
    assert_eq!(std::fs::read(kept).unwrap(), garbage, "the damaged bytes are kept");
    assert_eq!(invoke(&webview, "list_conversations", json!({})).unwrap(), json!([]));
}

#[test]
fn backend_commands_round_trip_and_new_chats_take_the_default_backend() {
    let dir = tempfile::tempdir().unwrap();
    let (_app, webview) = app(dir.path());
    let new = json!({"name": "GPU box", "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "", "model": "kimi-k3"});
    let added = invoke(&webview, "add_backend", json!({ "backend": new })).unwrap();
    assert_eq!(
        added,
        json!({"id": "gpu-box", "name": "GPU box", "baseUrl": "http://127.0.0.1:9/v1", "model": "kimi-k3", "host": "127.0.0.1:9", "key": null})
    );
    let bad = json!({"name": "x", "baseUrl": "ftp://h/v1", "apiKey": "", "model": "m"});
    assert_eq!(
        invoke(&webview, "add_backend", json!({ "backend": bad })).unwrap_err()["code"],
        json!("INVALID_ARGUMENT")
    );
    assert_eq!(invoke(&webview, "list_backends", json!({})).unwrap(), json!([added]));
    // Port 9 (discard) refuses: the Remote code, the URL named, after the retries.
    let e =
        invoke(&webview, "list_remote_models", json!({"baseUrl": "http://127.0.0.1:9/v1", "apiKey": ""})).unwrap_err();
    assert_eq!(e["code"], json!("REMOTE"), "{e}");
    assert!(e["message"].as_str().unwrap().contains("http://127.0.0.1:9/v1/models"), "{e}");

    let fresh = invoke(&webview, "create_conversation", json!({})).unwrap();
    assert_eq!(fresh["backend"], json!(null), "new chats are answered on this computer by default");
    let mut defaults = invoke(&webview, "chat_defaults", json!({})).unwrap()["defaults"].clone();
    defaults["backend"] = json!("nope");
    let refused = invoke(&webview, "set_chat_defaults", json!({ "defaults": defaults })).unwrap_err();
    assert_eq!(refused["code"], json!("INVALID_ARGUMENT"), "{refused}");
    defaults["backend"] = json!("gpu-box");
    invoke(&webview, "set_chat_defaults", json!({ "defaults": defaults })).unwrap();
    let remote = invoke(&webview, "create_conversation", json!({})).unwrap();
    assert_eq!(remote["backend"], json!("gpu-box"), "the user chose this backend for new chats");
    let id = remote["id"].as_i64().unwrap();
    let local = invoke(&webview, "set_conversation_backend", json!({"id": id, "backend": null})).unwrap();
    assert_eq!(local["backend"], json!(null));
    let e = invoke(&webview, "set_conversation_backend", json!({"id": id, "backend": "nope"})).unwrap_err();
    assert_eq!(e["code"], json!("INVALID_ARGUMENT"));
    invoke(&webview, "remove_backend", json!({"id": "gpu-box"})).unwrap();
    assert_eq!(
        invoke(&webview, "create_conversation", json!({})).unwrap()["backend"],
        json!(null),
        "a removed default keeps prompts here"
    );
}

/// A synthetic checkpoint whose trunk streams from `<folder>/.k3-desktop/trunk`, as the
/// setup wizard leaves a store.
fn streaming_folder(root: &Path) -> PathBuf {
    let model = root.join("model");
    k3_synth::write_checkpoint(&k3_tests::streaming_spec(3), &model, &mut |_| {}).unwrap();
    let trunk = model.join(".k3-desktop").join("trunk");
    k3_engine::pack_trunk(&model, &trunk, &mut |_| {}).unwrap();
    model
}

fn measured_drive(data: &Path) {
    use k3_app::setup::settings::{SetupSettings, SpeedSummary};
    let speed = SpeedSummary {
        qd1_mb_per_s: 40.0,
        qd16_mb_per_s: 60.0,
        qd1_experts_per_s: 10.0,
        qd16_experts_per_s: 15.0,
        direct: true,
        read_pattern: None,
    };
    let settings = k3_app::settings::Settings::open(data);
    SetupSettings { speed: Some(speed), ..SetupSettings::default() }.save(&settings).unwrap();
}

#[test]
fn placement_by_measured_cost_is_previewed_applied_saved_and_restored_through_ipc() {
    let root = tempfile::tempdir().unwrap();
    let model = streaming_folder(root.path());
    let opened = |data: &Path| {
        let options = k3_app::options::AppOptions { startup_model: Some(model.clone()), ..common::options(data) };
        let app = common::app_with(&options, data);
        invoke(&app.1, "current_model", json!({})).unwrap();
        app
    };
    // Below even a piece ring's floor (one slot for the largest matrix, 1.17 MB here).
    let custom = json!({"kind": "custom", "trunkBytes": 1_000_000, "cacheBytes": 40_000_000});

    // Without the drive's speed test there is no rate to weigh: the page is told why, and
    // an apply is refused with that reason and changes nothing.
    let untested = root.path().join("untested");
    let (_app, webview) = opened(&untested);
    let view = invoke(&webview, "memory_settings", json!({})).unwrap();
    assert_eq!((view["placement"].as_str(), view["streamedTrunk"].as_bool()), (Some("prefix"), Some(true)));
    assert!(view["costPlacementNote"].as_str().unwrap().contains("speed test"), "{view}");
    assert!(view["forecastNote"].as_str().unwrap().contains("Performance › Drive speed"), "where the test is: {view}");
    let refused =
        invoke(&webview, "apply_memory", json!({"choice": custom, "placement": "cost", "onEvent": "__CHANNEL__:1"}))
            .unwrap_err();
    assert!(refused["message"].as_str().unwrap().contains("speed test"), "{refused}");
    assert!(!untested.join("memory.json").exists(), "a refused placement saves nothing");

    // With it: previewed, applied without a restart, saved with its rates, and restored.
    let data = root.path().join("data");
    measured_drive(&data);
    let (_app, webview) = opened(&data);
    let view = invoke(&webview, "memory_settings", json!({})).unwrap();
    assert_eq!(view["costPlacementNote"], Value::Null, "{view}");
    let what_if = invoke(&webview, "memory_what_if", json!({"contextLength": 512, "placement": "cost"})).unwrap();
    assert_eq!((what_if["placement"].as_str(), what_if["previewPlacement"].as_str()), (Some("prefix"), Some("cost")));
    let preview = invoke(&webview, "plan_preview", json!({"choice": custom, "placement": "cost"})).unwrap();
    assert_eq!(preview["problem"], Value::Null, "{preview}");
    assert!(preview["totalBytes"].as_u64().unwrap() > 0 && preview["secondsLow"].as_f64().unwrap() > 0.0, "{preview}");

    let applied =
        invoke(&webview, "apply_memory", json!({"choice": custom, "placement": "cost", "onEvent": "__CHANNEL__:1"}))
            .unwrap();
    let memory = applied["model"]["memory"].as_str().unwrap();
    assert!(memory.contains("placed by measured cost"), "{memory}");
    assert_eq!(applied["view"]["placement"], "cost");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(data.join("memory.json")).unwrap()).unwrap();
    assert_eq!(file["placement"], "cost");
    let saved_drive = file["costRates"]["diskTrunkBytesPerSecond"].as_f64().unwrap();
    assert_eq!(saved_drive, 60e6, "the speed test's rate is the one planned with: {file}");
    assert!(file["costRates"]["decodeBytesPerSecond"].as_f64().unwrap() > 0.0, "{file}");
    drop((_app, webview));

    let (_app, webview) = opened(&data);
    let status = invoke(&webview, "current_model", json!({})).unwrap();
    assert!(
        status.to_string().contains("placed by measured cost"),
        "a restart opens with the saved placement: {status}"
    );
    let view = invoke(&webview, "memory_settings", json!({})).unwrap();
    assert_eq!((view["placement"].as_str(), view["current"].clone()), (Some("cost"), custom.clone()));

    // The prefix cannot stream from a trunk budget smaller than its smallest ring slot
    // (the largest piece's), which the cost rule could use (it moves bytes between trunk and cache): refused,
    // and the placement in force stays, in the app and on disk.
    let refused =
        invoke(&webview, "apply_memory", json!({"choice": custom, "placement": "prefix", "onEvent": "__CHANNEL__:1"}))
            .unwrap_err();
    assert_eq!(refused["code"], json!("BUDGET_TOO_SMALL"), "{refused}");
    assert_eq!(invoke(&webview, "memory_settings", json!({})).unwrap()["placement"], "cost");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(data.join("memory.json")).unwrap()).unwrap();
    assert_eq!(file["placement"], "cost");

    // Back to the prefix at a budget it can plan: nothing of the cost rule is left in
    // force or on disk.
    let custom = json!({"kind": "custom", "trunkBytes": 8_000_000, "cacheBytes": 40_000_000});
    let applied =
        invoke(&webview, "apply_memory", json!({"choice": custom, "placement": "prefix", "onEvent": "__CHANNEL__:1"}))
            .unwrap();
    assert!(!applied["model"]["memory"].as_str().unwrap().contains("placed by"), "{applied}");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(data.join("memory.json")).unwrap()).unwrap();
    assert_eq!((file["placement"].as_str(), &file["costRates"]), (Some("prefix"), &Value::Null));
}

#[test]
fn the_demo_models_memory_page_offers_no_placement_and_no_drive_to_measure() {
    let data = tempfile::tempdir().unwrap();
    let (_app, webview) = common::app(data.path());
    invoke(&webview, "current_model", json!({})).unwrap();
    let view = invoke(&webview, "memory_settings", json!({})).unwrap();
    assert_eq!(view["streamedTrunk"], json!(false), "{view}");
    assert!(view["costPlacementNote"].as_str().unwrap().contains("no packed trunk"), "{view}");
    // The demo is read into RAM: the speed test is not offered for it, so it is not asked for.
    assert!(view["forecastNote"].as_str().unwrap().contains("demo model is read into RAM"), "{view}");
}
