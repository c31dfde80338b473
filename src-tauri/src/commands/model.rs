//! Model commands: which model is loaded, open another folder, pick one with a dialog, and
//! Settings › Model folder (its view, "Verify now" and its stop).

use std::path::PathBuf;

use k3_app::model_folder::{self as core, folder_view};
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use std::sync::atomic::Ordering;

use tauri::ipc::Channel;

use crate::ipc::dto::{ModelInfo, ModelStatus};
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::model_folder::{ModelFolderView, VerifyOutcome, VerifyProgress};
use crate::ipc::twin::ToWire;
use crate::state::AppState;
use k3_app::worker::ModelTarget;

/// The model in use (waits for the startup load).
#[tauri::command]
pub async fn current_model(state: State<'_, AppState>) -> Result<ModelStatus, IpcError> {
    let worker = state.worker.clone();
    tauri::async_runtime::spawn_blocking(move || worker.status().to_wire()).await.map_err(join_error)
}

/// Opens `path`, or the bundled demo when `path` is null; the old model stays on failure.
#[tauri::command]
pub async fn open_model(state: State<'_, AppState>, path: Option<String>) -> Result<ModelInfo, IpcError> {
    let target = match path {
        Some(p) => {
            let path = PathBuf::from(p);
            ModelTarget { trunk: k3_app::options::packed_trunk_of(&path), ..ModelTarget::folder(path, false) }
        }
        None => state.demo.clone(),
    };
    let target = state.memory().applied_to(target);
    let worker = state.worker.clone();
    let opened = tauri::async_runtime::spawn_blocking(move || worker.open_model(target)).await.map_err(join_error)?;
    Ok(opened?.to_wire())
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

/// The model in use, or [`no_model`].
pub fn loaded_model(state: &AppState) -> Result<k3_runtime::ModelSummary, IpcError> {
    state.worker.probe().snapshot().model.ok_or_else(no_model)
}

/// The error of every command that needs a loaded model when none is.
pub fn no_model() -> IpcError {
    IpcError::new(ErrorCode::ModelNotLoaded, "no model is loaded")
}

/// Settings › Model folder: the model in use, its commit and verified files, its trunk.
#[tauri::command]
pub async fn model_folder(state: State<'_, AppState>) -> Result<ModelFolderView, IpcError> {
    let model = loaded_model(&state)?;
    tauri::async_runtime::spawn_blocking(move || {
        folder_view(&model.path, &model.name, model.is_demo, model.trunk_dir.as_deref()).into()
    })
    .await
    .map_err(join_error)
}

/// "Verify now": hashes every file of the model in use against its pinned hashes, with
/// progress; `stop_verify` ends it within one 8 MiB read.
#[tauri::command]
pub async fn verify_model_folder(
    state: State<'_, AppState>,
    on_event: Channel<VerifyProgress>,
) -> Result<VerifyOutcome, IpcError> {
    let model = loaded_model(&state)?;
    let stop = state.verify_stop.clone();
    stop.store(false, Ordering::SeqCst);
    tauri::async_runtime::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let total = folder_view(&model.path, &model.name, model.is_demo, None).bytes;
        let (mut done, mut last) = (0u64, std::time::Instant::now());
        let mut progress = |file: &str, n: u64| {
            done += n;
            if last.elapsed() >= std::time::Duration::from_millis(100) || done == total {
                last = std::time::Instant::now();
                let _ = on_event.send(VerifyProgress { file: file.to_string(), done_bytes: done, total_bytes: total });
            }
        };
        let report = k3_store::verify::verify_store_until(&model.path, &mut progress, &|| stop.load(Ordering::SeqCst))
            .map_err(|e| {
                k3_app::setup::jobs::store_error(e).with_details(format!("Verifying {}", model.path.display()))
            })?;
        let view = folder_view(&model.path, &model.name, model.is_demo, model.trunk_dir.as_deref());
        Ok(core::VerifyOutcome::of(&report, started.elapsed().as_secs_f64(), view).into())
    })
    .await
    .map_err(join_error)?
}

/// Stops a running "Verify now" (no-op when none runs).
#[tauri::command]
pub fn stop_verify(state: State<'_, AppState>) {
    state.verify_stop.store(true, Ordering::SeqCst);
}
