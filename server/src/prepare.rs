//! A chat request body checked and queued: parsed, its model resolved, its sampling and
//! stops checked, its turn built (a forced tool call when the server requires one), and
//! the generation started. The live route and each request of a batch take this one path.
//!
//! Owns: [`prepare_bytes`].

use k3_engine::chat::ChatMode;

use crate::api_error::ApiError;
use crate::generation::{start, Generation};
use crate::reply::ApiTurn;
use crate::request::{parse, ChatRequest};
use crate::split::{Channels, ReplyText};
use crate::state::AppState;
use crate::turn::chat_turn;

/// A request body (JSON bytes) checked and queued: the live route's and each request of a
/// batch's (`batches`); with whether it asked to stream.
pub(crate) fn prepare_bytes(state: &AppState, bytes: &[u8]) -> Result<(Generation, bool), ApiError> {
    let request: ChatRequest = parse(bytes)?;
    let model = state
        .registry
        .resolve(&request.model)
        .ok_or_else(|| ApiError::ModelNotFound { model: request.model.clone() })?;
    let params = request.sampling.params(state.limits.default_max_tokens, model.context_length)?;
    let stops = request.sampling.stops()?;
    let (mut turn, mode) = chat_turn(&request, params)?;
    if state.limits.require_tool_call {
        crate::agent::require_call(&mut turn);
    }
    let thinking = mode == ChatMode::Thinking;
    let channels = if thinking { Channels::Thinking } else { Channels::Instruct };
    let text = ReplyText::new(channels, stops);
    let generation = start(state, ApiTurn::Chat(Box::new(turn)), text, model.id, thinking)?;
    Ok((generation, request.stream))
}
