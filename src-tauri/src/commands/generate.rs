//! Generation commands: each queues a job on the engine worker and returns its id at once;
//! events stream over the `on_event` channel; `cancel_generation` stops it in the engine.

use tauri::ipc::Channel;
use tauri::State;

use crate::ipc::error::IpcError;
use crate::ipc::events::{channel_emitter, GenerationEvent};
use crate::state::AppState;
use k3_app::performance::SpeculationChoice;
use k3_app::saved_states::{self, ResumeChoice};
use k3_app::worker::{JobKind, LocalReply};

/// Where conversation `id`'s reply goes and how the local engine answers it: the saved
/// speculative decoding choice, the state file (room made for it among the kept ones),
/// and the tools of the conversation's servers (`ToolsHost::for_reply`), all read per
/// reply so a change applies from the next one.
async fn route(
    state: &AppState,
    id: i64,
    after_tools: bool,
) -> Result<(&k3_app::backends::Backends, LocalReply), IpcError> {
    let resume = ResumeChoice::load(&state.settings);
    let state_file = saved_states::state_file(&state.data_dir, id, resume);
    saved_states::prune(&state.data_dir, resume.keep, state_file.as_deref())?;
    let mode = SpeculationChoice::load(&state.settings).decode_mode();
    let settings = state.history()?.get(id)?.settings;
    let (tools, tool_choice) = state.tools.for_reply(&settings, after_tools).await;
    Ok((&state.backends, LocalReply { mode, state_file, tools, tool_choice }))
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
    Ok(state.worker.generate(
        conversation_id,
        JobKind::Send { text },
        channel_emitter(on_event),
        route(&state, conversation_id, false).await?,
    )?)
}

#[tauri::command]
pub async fn regenerate(
    state: State<'_, AppState>,
    conversation_id: i64,
    on_event: Channel<GenerationEvent>,
) -> Result<u64, IpcError> {
    Ok(state.worker.generate(
        conversation_id,
        JobKind::Regenerate,
        channel_emitter(on_event),
        route(&state, conversation_id, false).await?,
    )?)
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
    Ok(state.worker.generate(
        conversation_id,
        kind,
        channel_emitter(on_event),
        route(&state, conversation_id, false).await?,
    )?)
}

/// Answers the tool results after conversation `conversation_id`'s last reply: the next
/// step of a tool loop, once every call of that reply has its result.
#[tauri::command]
pub async fn continue_reply(
    state: State<'_, AppState>,
    conversation_id: i64,
    on_event: Channel<GenerationEvent>,
) -> Result<u64, IpcError> {
    let route = route(&state, conversation_id, true).await?;
    Ok(state.worker.generate(conversation_id, JobKind::Continue, channel_emitter(on_event), route)?)
}

/// Stops job `job_id` (queued or running); false when it already ended.
#[tauri::command]
pub async fn cancel_generation(state: State<'_, AppState>, job_id: u64) -> Result<bool, IpcError> {
    Ok(state.worker.cancel(job_id))
}
