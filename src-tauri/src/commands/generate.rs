//! Generation commands: each queues a job on the engine worker and returns its id at once;
//! events stream over the `on_event` channel; `cancel_generation` stops it in the engine.

use tauri::ipc::Channel;
use tauri::State;

use crate::ipc::error::IpcError;
use crate::ipc::events::{channel_emitter, GenerationEvent};
use crate::performance::SpeculationChoice;
use crate::state::AppState;
use crate::worker::JobKind;

/// Where a conversation's reply goes and how the local engine decodes it (the saved
/// speculative decoding choice, read per reply so a change applies from the next one).
fn route(state: &AppState) -> (&crate::backends::Backends, k3_engine::DecodeMode) {
    (&state.backends, SpeculationChoice::load(&state.data_dir).decode_mode())
}

#[tauri::command]
pub async fn send_message(
    state: State<'_, AppState>,
    conversation_id: i64,
    text: String,
    on_event: Channel<GenerationEvent>,
) -> Result<u64, IpcError> {
    if text.trim().is_empty() {
        return Err(IpcError::invalid("the message is empty"));
    }
    state.worker.generate(conversation_id, JobKind::Send { text }, channel_emitter(on_event), route(&state))
}

#[tauri::command]
pub async fn regenerate(
    state: State<'_, AppState>,
    conversation_id: i64,
    on_event: Channel<GenerationEvent>,
) -> Result<u64, IpcError> {
    state.worker.generate(conversation_id, JobKind::Regenerate, channel_emitter(on_event), route(&state))
}

#[tauri::command]
pub async fn edit_message(
    state: State<'_, AppState>,
    conversation_id: i64,
    message_id: i64,
    text: String,
    on_event: Channel<GenerationEvent>,
) -> Result<u64, IpcError> {
    if text.trim().is_empty() {
        return Err(IpcError::invalid("the message is empty"));
    }
    let kind = JobKind::Edit { message_id, text };
    state.worker.generate(conversation_id, kind, channel_emitter(on_event), route(&state))
}

/// Stops job `job_id` (queued or running); false when it already ended.
#[tauri::command]
pub async fn cancel_generation(state: State<'_, AppState>, job_id: u64) -> Result<bool, IpcError> {
    Ok(state.worker.cancel(job_id))
}
