//! The router: endpoints, the request guard, the request log, JSON 404/405.
//!
//! Owns: which path runs which handler, and the layer order — the request log outermost
//! (it sees every answer, refusals included), then the guard (Host, Origin, key), then
//! the route.
//! Must not: add CORS headers (a browser page may not read any answer).

mod batches;
mod chat;
mod completions;
mod health;
mod messages;
mod models;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::api_error::ApiError;
use crate::config::{RequestLog, RequestLogFn};
use crate::security::{guard, Guard};
use crate::state::AppState;

/// The largest file `POST /v1/files` takes.
pub const MAX_UPLOAD_BYTES: usize = 200 << 20;

/// The peer of a connection, set by the accept loop.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// The whole API.
pub fn router(state: AppState, guard_config: Arc<Guard>, log: Option<RequestLogFn>) -> Router {
    let log_state = LogState { log, stats: state.stats.clone() };
    Router::new()
        .route("/health", get(health::health))
        .route("/v1/models", get(models::list))
        .route("/v1/models/{id}", get(models::one))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/completions", post(completions::completions))
        .route("/v1/messages", post(messages::messages))
        .route("/v1/messages/count_tokens", post(messages::count_tokens))
        .route("/v1/files", post(batches::upload).get(batches::list_files))
        .route("/v1/files/{id}", get(batches::file).delete(batches::delete_file))
        .route("/v1/files/{id}/content", get(batches::file_content))
        .route("/v1/batches", post(batches::create).get(batches::list))
        .route("/v1/batches/{id}", get(batches::retrieve))
        .route("/v1/batches/{id}/cancel", post(batches::cancel))
        // Batch input files are larger than one request (OpenAI takes up to 200 MB).
        .layer(axum::extract::DefaultBodyLimit::max(MAX_UPLOAD_BYTES))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(middleware::from_fn_with_state(guard_config, guard))
        .layer(middleware::from_fn_with_state(log_state, log_request))
}

async fn not_found() -> Response {
    ApiError::NotFound.into_response()
}

async fn method_not_allowed() -> Response {
    ApiError::MethodNotAllowed.into_response()
}

#[derive(Clone)]
struct LogState {
    log: Option<RequestLogFn>,
    stats: Arc<crate::stats::ServerStats>,
}

async fn log_request(State(state): State<LogState>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().to_string();
    let path = request.uri().path().chars().take(256).collect::<String>();
    let peer = request.extensions().get::<Peer>().map(|p| p.0);
    let response = next.run(request).await;
    state.stats.request();
    if let Some(log) = &state.log {
        log(&RequestLog { method, path, status: response.status().as_u16(), duration: start.elapsed(), peer });
    }
    response
}
