//! `POST /v1/messages` (Anthropic's Messages API): parse, check, resolve the model, build
//! the turn, then answer whole or as Anthropic's event stream; refusals in its error shape.
//! `POST /v1/messages/count_tokens`: the same body without `max_tokens`, answered with the
//! prompt's token count (`input_tokens`) as the open model would feed it.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use k3_engine::chat::ChatMode;
use k3_engine::{DecodeMode, GenerateParams, Sampling};
use serde_json::json;

use crate::anthropic::request::{messages_turn, MessagesRequest};
use crate::anthropic::response::error_response;
use crate::api_error::ApiError;
use crate::body::read_json;
use crate::generation::{start, Generation};
use crate::reply::ApiTurn;
use crate::request::{parse, unknown_fields};
use crate::split::{Channels, ReplyText};
use crate::state::AppState;

pub async fn messages(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_json(&headers, body, &state.limits).await {
        Ok(bytes) => bytes,
        Err(e) => return error_response(&e),
    };
    let ignored = unknown_fields(&bytes, &[MessagesRequest::FIELDS]);
    let response = match prepare(&state, &bytes) {
        Ok((generation, true)) => generation.stream(&state),
        Ok((generation, false)) => generation.collect().await,
        Err(e) => error_response(&e),
    };
    crate::answer::with_ignored(response, &ignored)
}

fn prepare(state: &AppState, bytes: &[u8]) -> Result<(Generation, bool), ApiError> {
    let request: MessagesRequest = parse(bytes)?;
    let model = state
        .registry
        .resolve(&request.model)
        .ok_or_else(|| ApiError::ModelNotFound { model: request.model.clone() })?;
    let sampling = request.sampling(model.context_length)?;
    let params = sampling.params(state.limits.default_max_tokens, model.context_length)?;
    let stops = sampling.stops()?;
    let (mut turn, mode) = messages_turn(&request, params)?;
    if state.limits.require_tool_call {
        crate::agent::require_call(&mut turn);
    }
    let thinking = mode == ChatMode::Thinking;
    let channels = if thinking { Channels::Thinking } else { Channels::Instruct };
    let generation = start(state, ApiTurn::Chat(Box::new(turn)), ReplyText::new(channels, stops), model.id, thinking)?;
    Ok((generation.answered_as_messages(), request.stream))
}

pub async fn count_tokens(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    match count(&state, &headers, body).await {
        Ok(n) => Json(json!({ "input_tokens": n })).into_response(),
        Err(e) => error_response(&e),
    }
}

async fn count(state: &AppState, headers: &HeaderMap, body: Body) -> Result<usize, ApiError> {
    let bytes = read_json(headers, body, &state.limits).await?;
    let request: MessagesRequest = parse(&bytes)?;
    state.registry.resolve(&request.model).ok_or_else(|| ApiError::ModelNotFound { model: request.model.clone() })?;
    // Nothing is generated: the parameters only complete the turn.
    let params = GenerateParams {
        max_new_tokens: 0,
        sampling: Sampling::Greedy,
        stop_ids: Vec::new(),
        mode: DecodeMode::Incremental,
    };
    let (turn, _) = messages_turn(&request, params)?;
    let counter = state.runtime.prompt_counter().ok_or(ApiError::NoModel)?;
    // Rendering and encoding a long history is CPU work: off the async threads.
    tokio::task::spawn_blocking(move || counter.count(&turn))
        .await
        .map_err(|e| ApiError::Engine { message: e.to_string() })?
        .map_err(|e| ApiError::Engine { message: e.to_string() })
}
