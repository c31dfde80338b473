//! The JSON Anthropic's clients read: a `message`, its content blocks and `usage`, and
//! errors as `{"type": "error", "error": {"type", "message"}}`.
//!
//! Owns: the wire names — blocks `thinking` (an empty `signature`: nothing is signed
//! here), `text` and `tool_use` (`input`: the call's arguments as an object); the stop
//! reasons `end_turn`, `max_tokens`, `tool_use`; `usage.input_tokens` (the tokens
//! prefilled now), `cache_read_input_tokens` (those whose engine state was reused),
//! `output_tokens`.
//! Must not: compute a figure (they come from the runtime's `ReplyFigures`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::head::Head;
use crate::reply::Done;

/// Anthropic's stop reason for an OpenAI finish reason.
pub fn stop_reason(finish: &str) -> &'static str {
    match finish {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        _ => "end_turn",
    }
}

/// `usage` of a finished reply.
pub fn usage(done: &Done) -> Value {
    let f = &done.figures;
    json!({
        "input_tokens": f.prefilled_tokens,
        "cache_read_input_tokens": f.prompt_tokens.saturating_sub(f.prefilled_tokens),
        "cache_creation_input_tokens": 0,
        "output_tokens": done.token_ids.len(),
    })
}

/// A call's `input`: its arguments as JSON (they always parse: the reply reader checks).
pub fn input(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| json!({}))
}

/// The whole message of a non-streaming request.
pub fn message(head: &Head, done: &Done) -> Value {
    let mut content = Vec::new();
    if head.thinking {
        content.push(json!({"type": "thinking", "thinking": done.reasoning, "signature": ""}));
    }
    if !done.content.is_empty() || done.tool_calls.is_empty() {
        content.push(json!({"type": "text", "text": done.content}));
    }
    for call in &done.tool_calls {
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.tool, "input": input(&call.arguments)}));
    }
    json!({
        "id": head.id,
        "type": "message",
        "role": "assistant",
        "model": head.model,
        "content": content,
        "stop_reason": stop_reason(done.finish),
        "stop_sequence": null,
        "usage": usage(done),
    })
}

/// Anthropic's error type for an API error.
fn error_type(error: &ApiError) -> &'static str {
    match error.status() {
        StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            "invalid_request_error"
        }
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::FORBIDDEN => "permission_error",
        StatusCode::NOT_FOUND => "not_found_error",
        StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
        StatusCode::SERVICE_UNAVAILABLE => "overloaded_error",
        _ => "api_error",
    }
}

/// The error body in Anthropic's shape.
pub fn error_body(error: &ApiError) -> Value {
    let message = error.body()["error"]["message"].clone();
    json!({"type": "error", "error": {"type": error_type(error), "message": message}})
}

/// The error as a response in Anthropic's shape (the status is the OpenAI route's).
pub fn error_response(error: &ApiError) -> Response {
    let mut response = (error.status(), Json(error_body(error))).into_response();
    if let Some(retry) = error.clone().into_response().headers().get("retry-after").cloned() {
        response.headers_mut().insert("retry-after", retry);
    }
    response
}
