//! Local API commands (Settings › Local API): thin adapters over [`k3_app::local_api`].
//! Starting and stopping join server threads, so they run off the UI thread.

use tauri::State;

use crate::commands::model::join_error;
use crate::ipc::error::IpcError;
use crate::ipc::local_api::{ApiSettings, ApiStatus};
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;

/// Whether the API runs, where, and its recent requests.
#[tauri::command]
pub fn api_status(state: State<'_, AppState>) -> ApiStatus {
    state.local_api.status().to_wire()
}

/// Starts (or restarts) the API with `settings`; a refusal is the status's `problem`.
#[tauri::command]
pub async fn api_start(state: State<'_, AppState>, settings: ApiSettings) -> Result<ApiStatus, IpcError> {
    let api = state.local_api.clone();
    let settings = FromWire::from_wire(settings);
    let status = tauri::async_runtime::spawn_blocking(move || api.start(settings)).await.map_err(join_error)?;
    Ok(status?.to_wire())
}

/// Stops the API; generations it was running are cancelled.
#[tauri::command]
pub async fn api_stop(state: State<'_, AppState>) -> Result<ApiStatus, IpcError> {
    let api = state.local_api.clone();
    let status = tauri::async_runtime::spawn_blocking(move || api.stop()).await.map_err(join_error)?;
    Ok(status?.to_wire())
}
