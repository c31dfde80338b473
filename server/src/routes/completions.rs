//! `POST /v1/completions`: a raw continuation of `prompt` (no chat template, no state
//! kept), answered whole or as SSE. The default length is 16 tokens, as OpenAI's.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use k3_runtime::CompletionTurn;

use crate::api_error::ApiError;
use crate::body::read_json;
use crate::generation::{start, Generation};
use crate::reply::ApiTurn;
use crate::request::{parse, unknown_fields, CompletionRequest, SamplingFields};
use crate::split::{Channels, ReplyText};
use crate::state::AppState;

/// OpenAI's default `max_tokens` for completions.
const DEFAULT_MAX_TOKENS: usize = 16;

pub async fn completions(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_json(&headers, body, &state.limits).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    let ignored = unknown_fields(&bytes, &[CompletionRequest::FIELDS, SamplingFields::FIELDS]);
    crate::answer::with_ignored(crate::answer::answer(&state, prepare(&state, &bytes)).await, &ignored)
}

fn prepare(state: &AppState, bytes: &[u8]) -> Result<(Generation, bool), ApiError> {
    let request: CompletionRequest = parse(bytes)?;
    let model = state.registry.resolve(&request.model).ok_or(ApiError::ModelNotFound { model: request.model })?;
    let params = request.sampling.params(DEFAULT_MAX_TOKENS, model.context_length)?;
    let text = ReplyText::new(Channels::Raw, request.sampling.stops()?);
    let turn = CompletionTurn { prompt: request.prompt.text()?.to_string(), params };
    let generation = start(state, ApiTurn::Completion(turn), text, model.id, false)?;
    Ok((generation, request.stream))
}
