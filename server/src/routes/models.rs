//! `GET /v1/models` and `GET /v1/models/{id}`: the registry's ids, never paths.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::registry::ModelEntry;
use crate::state::AppState;

fn object(m: &ModelEntry) -> Value {
    json!({ "id": m.id, "object": "model", "created": 0, "owned_by": "k3", "context_length": m.context_length })
}

pub async fn list(State(state): State<AppState>) -> Response {
    let data: Vec<Value> = state.registry.models().iter().map(object).collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

pub async fn one(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    match state.registry.resolve(&id) {
        Some(m) => Json(object(&m)).into_response(),
        None => ApiError::ModelNotFound { model: id }.into_response(),
    }
}
