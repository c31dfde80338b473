//! Conversation commands over the history store: list, create (with Settings › New chats'
//! defaults), read, update, delete, export, the history's startup notice, and the new-chat
//! defaults themselves.

use k3_app::chat_defaults::{model_defaults, ChatDefaults as CoreDefaults};
use k3_app::history::{export_conversation as render_export, SamplingSettings as CoreSampling};
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::ipc::chat_defaults::{ChatDefaults, ChatDefaultsView};
use crate::ipc::dto::{Conversation, ConversationSummary, ExportFile, ExportFormat, HistoryNotice, SamplingSettings};
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;

/// What the history's startup check found (a damaged file set aside, a newer app's file
/// left alone), or null when the history opened as it was.
#[tauri::command]
pub async fn history_notice(state: State<'_, AppState>) -> Result<Option<HistoryNotice>, IpcError> {
    Ok(state.history_notice.clone().to_wire())
}

#[tauri::command]
pub async fn list_conversations(state: State<'_, AppState>) -> Result<Vec<ConversationSummary>, IpcError> {
    Ok(state.history()?.list()?.to_wire())
}

#[tauri::command]
pub async fn create_conversation(state: State<'_, AppState>) -> Result<Conversation, IpcError> {
    // Settings › New chats: the saved defaults, with a fresh seed for each chat.
    let defaults = CoreDefaults::load(&state.settings);
    let store = state.history()?;
    let sampling = CoreSampling {
        tool_servers: k3_app::tools::offered_to_new_chats(&state.settings),
        ..defaults.sampling(fresh_seed())
    };
    let created = store.create_with_prompt(&sampling, &defaults.system_prompt)?;
    // A default backend removed since it was chosen: the chat starts on this computer (prompts stay here).
    match defaults.backend.as_deref() {
        Some(id) if state.backends.host(id).is_some() => Ok(store.set_backend(created.id, Some(id))?.to_wire()),
        Some(id) => {
            log::warn!("the default backend {id} was removed: the new chat is answered on this computer");
            Ok(created.to_wire())
        }
        None => Ok(created.to_wire()),
    }
}

#[tauri::command]
pub async fn chat_defaults(state: State<'_, AppState>) -> Result<ChatDefaultsView, IpcError> {
    let model = state.worker.probe().snapshot().model;
    let (model_defaults, model_note) = match model.as_ref().map(|m| model_defaults(&m.path)) {
        None => (None, Some("No model is loaded.".to_string())),
        Some(Ok(Some(d))) => (Some(d.to_wire()), None),
        Some(Ok(None)) => (None, Some("This model has no generation_config.json.".to_string())),
        Some(Err(e)) => (None, Some(e)),
    };
    Ok(ChatDefaultsView { defaults: CoreDefaults::load(&state.settings).to_wire(), model_defaults, model_note })
}

/// Saves the defaults new chats start with (checked as a conversation's settings are).
#[tauri::command]
pub async fn set_chat_defaults(state: State<'_, AppState>, defaults: ChatDefaults) -> Result<ChatDefaults, IpcError> {
    let defaults = CoreDefaults::from_wire(defaults);
    defaults.sampling(0).check()?;
    state.backends.check_known(defaults.backend.as_deref())?;
    defaults.save(&state.settings)?;
    Ok(defaults.to_wire())
}

#[tauri::command]
pub async fn get_conversation(state: State<'_, AppState>, id: i64) -> Result<Conversation, IpcError> {
    Ok(state.history()?.get(id)?.to_wire())
}

#[tauri::command]
pub async fn update_conversation(
    state: State<'_, AppState>,
    id: i64,
    title: String,
    system_prompt: String,
    settings: SamplingSettings,
) -> Result<Conversation, IpcError> {
    let settings = CoreSampling::from_wire(settings);
    settings.check()?;
    Ok(state.history()?.update(id, &title, &system_prompt, &settings)?.to_wire())
}

#[tauri::command]
pub async fn delete_conversation(state: State<'_, AppState>, id: i64) -> Result<(), IpcError> {
    state.history()?.delete(id)?;
    // Its saved engine state goes with it.
    Ok(k3_app::saved_states::forget(&state.data_dir, id)?)
}

#[tauri::command]
pub async fn export_conversation(
    state: State<'_, AppState>,
    id: i64,
    format: ExportFormat,
) -> Result<ExportFile, IpcError> {
    Ok(render_export(&state.history()?.get(id)?, FromWire::from_wire(format)).to_wire())
}

/// Asks where to save the export, writes it, and returns the path (null on cancel).
#[tauri::command]
pub async fn save_export<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: i64,
    format: ExportFormat,
) -> Result<Option<String>, IpcError> {
    save_through_dialog(&app, render_export(&state.history()?.get(id)?, FromWire::from_wire(format)).to_wire())
}

/// Asks where to save `file` (its name suggested), writes it, and returns the path (null on cancel).
pub(crate) fn save_through_dialog<R: Runtime>(
    app: &AppHandle<R>,
    file: ExportFile,
) -> Result<Option<String>, IpcError> {
    let Some(picked) = app.dialog().file().set_file_name(&file.file_name).blocking_save_file() else {
        return Ok(None);
    };
    let path = picked.into_path().map_err(|e| IpcError::new(ErrorCode::Io, e.to_string()))?;
    std::fs::write(&path, file.content)
        .map_err(|e| IpcError::new(ErrorCode::Io, format!("{}: {e}", path.display())))?;
    Ok(Some(path.display().to_string()))
}

/// A seed for a new conversation's sampling (shown and stored, so a reply can be redone).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish() % 1_000_000_000
}
