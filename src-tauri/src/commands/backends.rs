//! Remote backend commands (Settings › Backends, and a conversation's "Answered by"):
//! thin adapters over [`k3_app::backends`]. "Test" waits on the network, off the UI thread.

use tauri::State;

use crate::ipc::backends::{BackendTest, BackendView, NewBackend};
use crate::ipc::dto::Conversation;
use crate::ipc::error::IpcError;
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;

#[tauri::command]
pub fn list_backends(state: State<'_, AppState>) -> Vec<BackendView> {
    state.backends.list().to_wire()
}

/// Adds a backend; its key goes to the OS keyring (or a user-only file), never the list.
#[tauri::command]
pub fn add_backend(state: State<'_, AppState>, backend: NewBackend) -> Result<BackendView, IpcError> {
    Ok(state.backends.add(FromWire::from_wire(backend))?.to_wire())
}

/// Removes a backend and its key; conversations set to it say so when next sent to.
#[tauri::command]
pub fn remove_backend(state: State<'_, AppState>, id: String) -> Result<(), IpcError> {
    Ok(state.backends.remove(&id)?)
}

/// The model ids the endpoint at `base_url` lists (nothing is saved).
#[tauri::command]
pub async fn list_remote_models(base_url: String, api_key: String) -> Result<Vec<String>, IpcError> {
    Ok(k3_app::backends::Backends::list_models(&base_url, &api_key).await?)
}

/// Lists the backend's models and times one short reply.
#[tauri::command]
pub async fn test_backend(state: State<'_, AppState>, id: String) -> Result<BackendTest, IpcError> {
    Ok(state.backends.test(&id).await?.to_wire())
}

/// Sets who answers conversation `id`: backend `backend`, or the local engine (`null`).
#[tauri::command]
pub fn set_conversation_backend(
    state: State<'_, AppState>,
    id: i64,
    backend: Option<String>,
) -> Result<Conversation, IpcError> {
    state.backends.check_known(backend.as_deref())?;
    Ok(state.history()?.set_backend(id, backend.as_deref())?.to_wire())
}
