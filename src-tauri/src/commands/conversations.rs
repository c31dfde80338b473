//! Conversation commands over the history store: list, create (with Settings › New chats'
//! defaults), read, update, delete, export, the history's startup notice, and the new-chat
//! defaults themselves.

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;
use ts_rs::TS;

use crate::chat_defaults::{model_defaults, ChatDefaults, ModelDefaults};
use crate::history::export_conversation as render_export;
use crate::ipc::dto::{Conversation, ConversationSummary, ExportFile, ExportFormat, HistoryNotice, SamplingSettings};
use crate::ipc::error::{ErrorCode, IpcError};
use crate::state::AppState;

/// What the history's startup check found (a damaged file set aside, a newer app's file
/// left alone), or null when the history opened as it was.
#[tauri::command]
pub async fn history_notice(state: State<'_, AppState>) -> Result<Option<HistoryNotice>, IpcError> {
    Ok(state.history_notice.clone())
}

#[tauri::command]
pub async fn list_conversations(state: State<'_, AppState>) -> Result<Vec<ConversationSummary>, IpcError> {
    Ok(state.history()?.list()?)
}

#[tauri::command]
pub async fn create_conversation(state: State<'_, AppState>) -> Result<Conversation, IpcError> {
    // Settings › New chats: the saved defaults, with a fresh seed for each chat.
    let defaults = ChatDefaults::load(&state.settings);
    let store = state.history()?;
    let sampling = SamplingSettings {
        tool_servers: crate::tools::offered_to_new_chats(&state.settings),
        ..defaults.sampling(fresh_seed())
    };
    let created = store.create_with_prompt(&sampling, &defaults.system_prompt)?;
    // A default backend removed since it was chosen: the chat starts on this computer (prompts stay here).
    match defaults.backend.as_deref() {
        Some(id) if state.backends.host(id).is_some() => Ok(store.set_backend(created.id, Some(id))?),
        Some(id) => {
            log::warn!("the default backend {id} was removed: the new chat is answered on this computer");
            Ok(created)
        }
        None => Ok(created),
    }
}

/// What Settings › New chats shows: the saved defaults and the loaded model's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChatDefaultsView {
    pub defaults: ChatDefaults,
    /// The loaded model's `generation_config.json`, when it has a usable one.
    pub model_defaults: Option<ModelDefaults>,
    /// Why there are none (no file, or what is wrong with it).
    pub model_note: Option<String>,
}

#[tauri::command]
pub async fn chat_defaults(state: State<'_, AppState>) -> Result<ChatDefaultsView, IpcError> {
    let model = state.worker.probe().snapshot().model;
    let (model_defaults, model_note) = match model.as_ref().map(|m| model_defaults(&m.path)) {
        None => (None, Some("No model is loaded.".to_string())),
        Some(Ok(Some(d))) => (Some(d), None),
        Some(Ok(None)) => (None, Some("This model has no generation_config.json.".to_string())),
        Some(Err(e)) => (None, Some(e)),
    };
    Ok(ChatDefaultsView { defaults: ChatDefaults::load(&state.settings), model_defaults, model_note })
}

/// Saves the defaults new chats start with (checked as a conversation's settings are).
#[tauri::command]
pub async fn set_chat_defaults(state: State<'_, AppState>, defaults: ChatDefaults) -> Result<ChatDefaults, IpcError> {
    check_settings(&defaults.sampling(0))?;
    state.backends.check_known(defaults.backend.as_deref())?;
    defaults.save(&state.settings)?;
    Ok(defaults)
}

#[tauri::command]
pub async fn get_conversation(state: State<'_, AppState>, id: i64) -> Result<Conversation, IpcError> {
    Ok(state.history()?.get(id)?)
}

#[tauri::command]
pub async fn update_conversation(
    state: State<'_, AppState>,
    id: i64,
    title: String,
    system_prompt: String,
    settings: SamplingSettings,
) -> Result<Conversation, IpcError> {
    check_settings(&settings)?;
    Ok(state.history()?.update(id, &title, &system_prompt, &settings)?)
}

#[tauri::command]
pub async fn delete_conversation(state: State<'_, AppState>, id: i64) -> Result<(), IpcError> {
    state.history()?.delete(id)?;
    // Its saved engine state goes with it.
    crate::saved_states::forget(&state.data_dir, id)
}

#[tauri::command]
pub async fn export_conversation(
    state: State<'_, AppState>,
    id: i64,
    format: ExportFormat,
) -> Result<ExportFile, IpcError> {
    Ok(render_export(&state.history()?.get(id)?, format))
}

/// Asks where to save the export, writes it, and returns the path (null on cancel).
#[tauri::command]
pub async fn save_export<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: i64,
    format: ExportFormat,
) -> Result<Option<String>, IpcError> {
    save_through_dialog(&app, render_export(&state.history()?.get(id)?, format))
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

/// Refuses settings the engine would refuse later (or silently read as greedy).
fn check_settings(s: &SamplingSettings) -> Result<(), IpcError> {
    if !(s.temperature.is_finite() && s.temperature >= 0.0) {
        return Err(IpcError::invalid(format!(
            "temperature {} must be 0 (greedy) or a positive number",
            s.temperature
        )));
    }
    if s.max_tokens == 0 {
        return Err(IpcError::invalid("max tokens must be at least 1"));
    }
    Ok(crate::worker::generate_params(s, k3_engine::DecodeMode::Incremental).sampling.validate()?)
}

/// A seed for a new conversation's sampling (shown and stored, so a reply can be redone).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish() % 1_000_000_000
}
