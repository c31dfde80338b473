//! Tools commands: Settings › Tools (servers, their tools, permissions) and the calls a
//! conversation's reply made, each run or denied by the user (`k3_app::tools::ToolsHost`).

use tauri::State;

use crate::ipc::dto::Message;
use crate::ipc::error::IpcError;
use crate::ipc::tools::{PendingToolCall, ServerToolInfo, ToolDecision, ToolServer, ToolServerInput};
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;

#[tauri::command]
pub async fn tool_servers(state: State<'_, AppState>) -> Result<Vec<ToolServer>, IpcError> {
    Ok(state.tools.servers().to_wire())
}

/// Adds (empty id) or changes a tool server.
#[tauri::command]
pub async fn save_tool_server(state: State<'_, AppState>, server: ToolServerInput) -> Result<ToolServer, IpcError> {
    Ok(state.tools.save(FromWire::from_wire(server))?.to_wire())
}

#[tauri::command]
pub async fn remove_tool_server(state: State<'_, AppState>, id: String) -> Result<(), IpcError> {
    Ok(state.tools.remove(&id)?)
}

/// Starts or reaches server `id` and lists its tools ("List tools").
#[tauri::command]
pub async fn list_server_tools(state: State<'_, AppState>, id: String) -> Result<Vec<ServerToolInfo>, IpcError> {
    Ok(state.tools.tools_of(&id).await?.to_wire())
}

/// Takes back "always allow" for one tool of server `id`.
#[tauri::command]
pub async fn revoke_tool_permission(
    state: State<'_, AppState>,
    id: String,
    tool: String,
) -> Result<ToolServer, IpcError> {
    Ok(state.tools.revoke(&id, &tool)?.to_wire())
}

/// The calls of conversation `conversation_id`'s last reply that wait for the user.
#[tauri::command]
pub async fn pending_tool_calls(
    state: State<'_, AppState>,
    conversation_id: i64,
) -> Result<Vec<PendingToolCall>, IpcError> {
    let conversation = state.history()?.get(conversation_id)?;
    Ok(state.tools.pending(&conversation.settings, &conversation.messages).await.to_wire())
}

/// Runs or denies one pending call as the user decided; returns the saved tool message.
#[tauri::command]
pub async fn decide_tool_call(
    state: State<'_, AppState>,
    conversation_id: i64,
    call_id: String,
    decision: ToolDecision,
) -> Result<Message, IpcError> {
    let decision = FromWire::from_wire(decision);
    Ok(state.tools.decide(&state.store, conversation_id, &call_id, decision).await?.to_wire())
}

/// Stops the running call of conversation `conversation_id` (its server is killed);
/// false when none runs.
#[tauri::command]
pub async fn stop_tool_call(state: State<'_, AppState>, conversation_id: i64) -> Result<bool, IpcError> {
    Ok(state.tools.stop(conversation_id))
}
