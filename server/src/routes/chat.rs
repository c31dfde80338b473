//! `POST /v1/chat/completions`: parse, check, resolve the model, build the turn, then
//! answer whole or as SSE.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use k3_engine::chat::ChatMode;

use crate::api_error::ApiError;
use crate::body::read_json;
use crate::generation::{start, Generation};
use crate::reply::ApiTurn;
use crate::request::{parse, unknown_fields, ChatRequest, SamplingFields};
use crate::split::{Channels, ReplyText};
use crate::state::AppState;
use crate::turn::chat_turn;

pub async fn chat_completions(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_json(&headers, body, &state.limits).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    let ignored = unknown_fields(&bytes, &[ChatRequest::FIELDS, SamplingFields::FIELDS]);
    super::with_ignored(super::answer(&state, prepare_bytes(&state, &bytes)).await, &ignored)
}

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
