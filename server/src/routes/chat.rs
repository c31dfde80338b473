//! `POST /v1/chat/completions`: parse, check, resolve the model, build the turn, then
//! answer whole or as SSE.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::answer::{answer, with_ignored};
use crate::body::read_json;
use crate::prepare::prepare_bytes;
use crate::request::{unknown_fields, ChatRequest, SamplingFields};
use crate::state::AppState;

pub async fn chat_completions(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_json(&headers, body, &state.limits).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    let ignored = unknown_fields(&bytes, &[ChatRequest::FIELDS, SamplingFields::FIELDS]);
    with_ignored(answer(&state, prepare_bytes(&state, &bytes)).await, &ignored)
}
