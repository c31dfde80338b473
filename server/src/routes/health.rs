//! `GET /health`: whether a model is loaded, what the engine does, this server's counters
//! (the cancel-on-disconnect latency among them). Open without the key.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use k3_runtime::Activity;
use serde_json::json;

use crate::state::AppState;

pub async fn health(State(state): State<AppState>) -> Response {
    let snapshot = state.runtime.probe().snapshot();
    let activity = match snapshot.activity {
        Activity::Idle => "idle",
        Activity::Opening { .. } => "opening",
        Activity::Generating { .. } => "generating",
        Activity::Replanning { .. } => "replanning",
    };
    let model = state.registry.models().into_iter().next().map(|m| m.id);
    Json(json!({
        "status": if model.is_some() { "ok" } else { "no_model" },
        "model": model,
        "activity": activity,
        "generations_in_flight": state.admission.in_flight(),
        "stats": state.stats.snapshot(),
    }))
    .into_response()
}
