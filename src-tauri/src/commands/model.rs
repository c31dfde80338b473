//! Model commands: which model is loaded, open another folder, pick one with a dialog.

use std::path::PathBuf;

use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::ipc::dto::{ModelInfo, ModelStatus};
use crate::ipc::error::IpcError;
use crate::state::AppState;
use crate::worker::ModelTarget;

/// The model in use (waits for the startup load).
#[tauri::command]
pub async fn current_model(state: State<'_, AppState>) -> Result<ModelStatus, IpcError> {
    let worker = state.worker.clone();
    tauri::async_runtime::spawn_blocking(move || worker.status()).await.map_err(join_error)
}

/// Opens `path`, or the bundled demo when `path` is null; the old model stays on failure.
#[tauri::command]
pub async fn open_model(state: State<'_, AppState>, path: Option<String>) -> Result<ModelInfo, IpcError> {
    let target = match path {
        Some(p) => ModelTarget {
            context_length: state.context_length,
            preset: state.preset,
            ..ModelTarget::folder(PathBuf::from(p), false)
        },
        None => state.demo.clone(),
    };
    let worker = state.worker.clone();
    tauri::async_runtime::spawn_blocking(move || worker.open_model(target)).await.map_err(join_error)?
}

/// A native folder picker; null when the user cancels.
#[tauri::command]
pub async fn pick_model_folder<R: Runtime>(app: AppHandle<R>) -> Result<Option<String>, IpcError> {
    let picked = app.dialog().file().set_title("Open a Kimi K3 model folder").blocking_pick_folder();
    Ok(picked.and_then(|p| p.into_path().ok()).map(|p| p.display().to_string()))
}

pub fn join_error(e: impl std::fmt::Display) -> IpcError {
    IpcError::internal(format!("background task failed: {e}"))
}
