//! Queue commands (the Queue view): thin adapters over [`crate::queue_host`]. Items are
//! sampled with the new-chat settings (Settings › New chats) as they are added.

use tauri::{AppHandle, Runtime, State};

use k3_app::queue::{import, ItemDefaults, ItemSettings, Queue};

use crate::commands::conversations::save_through_dialog;
use crate::ipc::dto::ExportFile;
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::queue::{QueueExportFormat, QueueImportFormat, QueueState};
use crate::state::AppState;
use k3_app::chat_defaults::ChatDefaults;

fn queue_error(e: k3_app::queue::QueueError) -> IpcError {
    match e {
        k3_app::queue::QueueError::Import { .. } => IpcError::invalid(e.to_string()),
        k3_app::queue::QueueError::NoItem { .. } => IpcError::new(ErrorCode::NotFound, e.to_string()),
        k3_app::queue::QueueError::Io { .. } | k3_app::queue::QueueError::Journal { .. } => {
            IpcError::new(ErrorCode::Io, e.to_string())
        }
    }
}

/// Applies `change` to the queue, then gives the view the window redraws from.
fn changed<T>(
    state: &AppState,
    change: impl FnOnce(&Queue) -> Result<T, k3_app::queue::QueueError>,
) -> Result<QueueState, IpcError> {
    change(state.queue.queue()?).map_err(queue_error)?;
    Ok(state.queue.state())
}

/// The answers rendered as `format`, as the wire's export file.
fn rendered(state: &AppState, format: QueueExportFormat) -> Result<ExportFile, IpcError> {
    let file = state.queue.queue()?.export(format.into());
    Ok(ExportFile { file_name: file.file_name, content: file.content })
}

/// The queue's prompts, counts and ETA.
#[tauri::command]
pub fn queue_state(state: State<'_, AppState>) -> QueueState {
    state.queue.state()
}

/// Adds the prompts in `text` (typed lines, JSONL or CSV) at the end of the queue.
#[tauri::command]
pub fn queue_add(state: State<'_, AppState>, text: String, format: QueueImportFormat) -> Result<QueueState, IpcError> {
    let items = import::parse(&text, format.into()).map_err(queue_error)?;
    let d = ChatDefaults::load(&state.settings);
    let settings =
        ItemSettings { temperature: d.temperature, top_p: d.top_p, max_tokens: d.max_tokens, thinking: d.thinking };
    let defaults = ItemDefaults { settings, system: Some(d.system_prompt) };
    changed(&state, |q| q.add(items, &defaults))
}

/// Pauses the queue: the running prompt stops and waits again (it restarts from its start).
#[tauri::command]
pub fn queue_pause(state: State<'_, AppState>) -> Result<QueueState, IpcError> {
    changed(&state, |q| q.pause())
}

/// Resumes a paused or stopped queue.
#[tauri::command]
pub fn queue_resume(state: State<'_, AppState>) -> Result<QueueState, IpcError> {
    changed(&state, |q| q.resume())
}

/// Cancels one prompt (a running one keeps what it wrote).
#[tauri::command]
pub fn queue_cancel(state: State<'_, AppState>, id: u64) -> Result<QueueState, IpcError> {
    changed(&state, |q| q.cancel(id))
}

/// Cancels every prompt not yet answered.
#[tauri::command]
pub fn queue_cancel_all(state: State<'_, AppState>) -> Result<QueueState, IpcError> {
    changed(&state, |q| q.cancel_all())
}

/// Removes the answered, failed and cancelled prompts from the list.
#[tauri::command]
pub fn queue_clear_finished(state: State<'_, AppState>) -> Result<QueueState, IpcError> {
    changed(&state, |q| q.clear_finished())
}

/// The answers as a file's text (JSONL or CSV).
#[tauri::command]
pub fn queue_export(state: State<'_, AppState>, format: QueueExportFormat) -> Result<ExportFile, IpcError> {
    rendered(&state, format)
}

/// Asks where to save the answers, writes them, and returns the path (null on cancel).
#[tauri::command]
pub async fn queue_save_export<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    format: QueueExportFormat,
) -> Result<Option<String>, IpcError> {
    save_through_dialog(&app, rendered(&state, format)?)
}
