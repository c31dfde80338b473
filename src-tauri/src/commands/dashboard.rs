//! Dashboard commands (the Memory and Disk tabs): thin adapters over [`k3_app::dashboard`];
//! and Settings › Diagnostics' report ([`k3_app::diagnostics`]).
//! The page calls them only while a dashboard is on screen, at most twice a second.

use tauri::{AppHandle, Manager, Runtime, State, WebviewUrl, WebviewWindowBuilder};

use crate::commands::model::join_error;
use k3_app::dashboard::disk::{drive_usage, OurFolders};

use crate::ipc::dashboard::{Dashboard, DriveUsage};
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::twin::ToWire;
use crate::state::AppState;

/// One reading of memory, activity and reads, with the tokens after `after`.
#[tauri::command]
pub fn dashboard(state: State<'_, AppState>, after: u64) -> Dashboard {
    let probe = state.worker.probe();
    let now = probe.snapshot();
    k3_app::dashboard::read(&now, &probe.tokens_since(after)).to_wire()
}

/// Space on each drive that holds the model, its trunk or the app's data.
#[tauri::command]
pub async fn disk_usage(state: State<'_, AppState>) -> Result<Vec<DriveUsage>, IpcError> {
    let model = state.worker.probe().snapshot().model;
    let folders = OurFolders {
        store: model.as_ref().map(|m| (m.path.clone(), m.checkpoint_bytes)),
        trunk: model.as_ref().and_then(|m| m.trunk_dir.clone()),
        app_data: state.data_dir.clone(),
    };
    tauri::async_runtime::spawn_blocking(move || drive_usage(&folders))
        .await
        .map_err(join_error)?
        .map(ToWire::to_wire)
        .map_err(|e| IpcError::new(ErrorCode::Io, e))
}

/// Settings › Diagnostics: the plain-text report (no prompts, no secrets).
#[tauri::command]
pub fn diagnostics(state: State<'_, AppState>) -> String {
    let probe = state.worker.probe().snapshot();
    let api = state.local_api.status();
    let api = match (&api.base_url, api.running) {
        (Some(url), true) => format!("running at {url}, {} requests answered", api.requests),
        _ => "off".to_string(),
    };
    let choice = state.memory_choice();
    let env = |name: &str| std::env::var(name).ok();
    k3_app::diagnostics::report(&k3_app::diagnostics::DiagnosticsInput {
        probe: &probe,
        setup: &state.setup.settings(),
        memory_choice: choice.name(),
        api: &api,
        data_dir: &state.data_dir,
        env: &env,
    })
}

/// The label of the dashboards' own window (one at a time).
pub const DASHBOARD_WINDOW: &str = "dashboard";

/// Opens the Memory or Disk tab in its own window (or brings that window forward on it).
#[tauri::command]
pub async fn open_dashboard_window<R: Runtime>(app: AppHandle<R>, view: String) -> Result<(), IpcError> {
    if view != "memory" && view != "disk" {
        return Err(IpcError::invalid(format!("no dashboard named {view:?}: memory or disk")));
    }
    let path = format!("index.html?view={view}");
    if let Some(w) = app.get_webview_window(DASHBOARD_WINDOW) {
        let url = w.url().map_err(|e| IpcError::internal(e.to_string()))?;
        let url = url.join(&path).map_err(|e| IpcError::internal(e.to_string()))?;
        w.navigate(url).map_err(|e| IpcError::internal(e.to_string()))?;
        return w.set_focus().map_err(|e| IpcError::internal(e.to_string()));
    }
    let title = if view == "memory" { "K3 Desktop — Memory" } else { "K3 Desktop — Disk" };
    WebviewWindowBuilder::new(&app, DASHBOARD_WINDOW, WebviewUrl::App(path.into()))
        .title(title)
        .inner_size(900.0, 700.0)
        .min_inner_size(480.0, 360.0)
        .build()
        .map_err(|e| IpcError::internal(format!("opening the {view} window: {e}")))?;
    Ok(())
}
