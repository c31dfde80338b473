//! `GET /health`: whether a model is loaded, what the engine does, the batch decoding
//! together, this server's counters
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
        // Replies decoding together now, the most that may (`k3 serve --batch`), and the
        // engine's shared steps so far (rows they carried, the most sequences in one).
        "batch": {
            "running": snapshot.replies_running,
            "limit": state.runtime.batch(),
            "steps": snapshot.batch.steps,
            "rows": snapshot.batch.rows,
            "widest_step": snapshot.batch.widest,
        },
        "stats": state.stats.snapshot(),
    }))
    .into_response()
}
