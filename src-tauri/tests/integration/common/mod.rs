//! What the IPC-level tests share: the app's options over a test data folder, a mock-runtime
//! app with the real commands, capability file and state, and invoking a command as the
//! window does.

use std::path::Path;

use serde_json::Value;
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{get_ipc_response, mock_builder, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::Manager;

pub type MockApp = (tauri::App<tauri::test::MockRuntime>, tauri::WebviewWindow<tauri::test::MockRuntime>);

/// The options a test app starts with: the demo model, `data` as the data folder.
pub fn options(data: &Path) -> k3_app::options::AppOptions {
    k3_app::options::AppOptions {
        startup_model: None,
        data_dir: Some(data.into()),
        // What the app does when neither K3_CONTEXT_LENGTH nor Settings › Memory names one.
        context_length: None,
        preset: k3_plan::Preset::Auto,
        repo: None,
        speed_seconds: 1.0,
        threads: k3_app::performance::Threads::default(),
        keyring: false,
    }
}

/// A mock-runtime app with the real commands, the real capability file (the app's own
/// context), a real history file and the demo model.
pub fn app(data: &Path) -> MockApp {
    app_with(&options(data), data)
}

/// [`app`] started with `options`.
pub fn app_with(options: &k3_app::options::AppOptions, data: &Path) -> MockApp {
    let state = k3_desktop::state::AppState::start(options, data, None).unwrap();
    let app = k3_desktop::with_commands(mock_builder()).build(tauri::generate_context!(test = true)).unwrap();
    app.manage(state);
    let webview = tauri::WebviewWindowBuilder::new(&app, "main", Default::default()).build().unwrap();
    (app, webview)
}

pub fn request(cmd: &str, body: Value) -> InvokeRequest {
    InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    }
}

/// `cmd` through IPC: its answer, or its error, as JSON.
pub fn invoke<W: AsRef<tauri::Webview<tauri::test::MockRuntime>>>(
    w: &W,
    cmd: &str,
    body: Value,
) -> Result<Value, Value> {
    get_ipc_response(w, request(cmd, body)).map(|b: InvokeResponseBody| b.deserialize::<Value>().unwrap())
}
