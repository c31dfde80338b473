//! [`ApiError`]: every HTTP error the API returns, in OpenAI's shape
//! `{"error": {"message", "type", "param", "code"}}` — as a response, or as a mid-stream
//! `data: {"error": …}` event.
//!
//! Owns: the status, `type` and `code` of each variant (matched exhaustively), and the
//! mapping of runtime errors (input errors 400, the rest 5xx).
//! Must not: echo unbounded client input (a 1 MB model name is cut), or put a local path
//! in a 5xx message.

use std::sync::Arc;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use k3_runtime::RuntimeError;
use serde_json::{json, Value};

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// The body is not JSON (truncated, BOM, NaN, bad UTF-8, too deep) or not the schema.
    BadJson { message: String },
    /// A field has a value the API refuses.
    Invalid { param: &'static str, message: String },
    /// The prompt does not fit the context length.
    ContextLength { message: String },
    /// A `Content-Type` other than JSON, or a compressed body.
    UnsupportedMedia { message: String },
    /// The body is larger than the limit.
    TooLarge { limit: usize },
    /// The body did not arrive in time after the request head (a slow or stalled client).
    BodyTimeout { seconds: u64 },
    /// `model` names no model of the registry.
    ModelNotFound { model: String },
    /// No model is loaded (or the engine worker stopped).
    NoModel,
    /// The bearer key is missing or wrong.
    Unauthorized,
    /// The `Host` header is not this server's loopback name (DNS rebinding).
    ForbiddenHost,
    /// A browser origin (or `null`) not on the allowlist.
    ForbiddenOrigin,
    /// The generation queue is full.
    QueueFull { retry_after_seconds: u64 },
    /// No such route.
    NotFound,
    /// The route exists for another method.
    MethodNotAllowed,
    /// The engine failed while running.
    Engine { message: String },
    /// The model's tool calls are malformed (never repaired or guessed).
    ModelOutput { message: String },
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadJson { .. } | ApiError::Invalid { .. } | ApiError::ContextLength { .. } => {
                StatusCode::BAD_REQUEST
            }
            ApiError::UnsupportedMedia { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::ModelNotFound { .. } | ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::NoModel => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::ForbiddenHost | ApiError::ForbiddenOrigin => StatusCode::FORBIDDEN,
            ApiError::QueueFull { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Engine { .. } | ApiError::ModelOutput { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// `(type, code, param)` of the body.
    fn kind(&self) -> (&'static str, &'static str, Option<&'static str>) {
        match self {
            ApiError::BadJson { .. } => ("invalid_request_error", "invalid_json", None),
            ApiError::Invalid { param, .. } => ("invalid_request_error", "invalid_value", Some(*param)),
            ApiError::ContextLength { .. } => ("invalid_request_error", "context_length_exceeded", Some("messages")),
            ApiError::UnsupportedMedia { .. } => ("invalid_request_error", "unsupported_media_type", None),
            ApiError::TooLarge { .. } => ("invalid_request_error", "request_too_large", None),
            ApiError::BodyTimeout { .. } => ("invalid_request_error", "request_timeout", None),
            ApiError::ModelNotFound { .. } => ("invalid_request_error", "model_not_found", Some("model")),
            ApiError::NoModel => ("server_error", "model_not_loaded", None),
            ApiError::Unauthorized => ("authentication_error", "invalid_api_key", None),
            ApiError::ForbiddenHost => ("permission_error", "forbidden_host", None),
            ApiError::ForbiddenOrigin => ("permission_error", "forbidden_origin", None),
            ApiError::QueueFull { .. } => ("rate_limit_error", "queue_full", None),
            ApiError::NotFound => ("invalid_request_error", "not_found", None),
            ApiError::MethodNotAllowed => ("invalid_request_error", "method_not_allowed", None),
            ApiError::Engine { .. } => ("server_error", "engine_error", None),
            ApiError::ModelOutput { .. } => ("server_error", "malformed_tool_call", None),
        }
    }

    fn message(&self) -> String {
        match self {
            ApiError::BadJson { message }
            | ApiError::Invalid { message, .. }
            | ApiError::ContextLength { message }
            | ApiError::UnsupportedMedia { message }
            | ApiError::Engine { message }
            | ApiError::ModelOutput { message } => message.clone(),
            ApiError::TooLarge { limit } => format!("the request body is larger than {limit} bytes"),
            ApiError::BodyTimeout { seconds } => format!("the request body did not arrive within {seconds} s"),
            ApiError::ModelNotFound { model } => {
                format!("the model `{}` does not exist; GET /v1/models lists the ids", cut(model, 64))
            }
            ApiError::NoModel => "no model is loaded".into(),
            ApiError::Unauthorized => "missing or wrong API key (Authorization: Bearer KEY)".into(),
            ApiError::ForbiddenHost => "the Host header must be 127.0.0.1:PORT, localhost:PORT or [::1]:PORT".into(),
            ApiError::ForbiddenOrigin => "cross-origin requests are not accepted".into(),
            ApiError::QueueFull { .. } => "the generation queue is full; retry later".into(),
            ApiError::NotFound => "no such endpoint".into(),
            ApiError::MethodNotAllowed => "this endpoint does not accept that method".into(),
        }
    }

    /// The OpenAI error object.
    pub fn body(&self) -> Value {
        let (kind, code, param) = self.kind();
        json!({ "error": { "message": self.message(), "type": kind, "param": param, "code": code } })
    }

    /// A generation error (the runtime's or the engine's). What the request caused is a 4xx
    /// naming its field; a fault of this machine (its files, its model, its drive) is a 5xx
    /// with a generic message, the details (paths included) going to the server's log only
    /// (probe finding: a damaged trunk reached clients as a 400 on `messages` with a path).
    pub fn from_runtime(error: &Arc<RuntimeError>) -> ApiError {
        match error.as_ref() {
            RuntimeError::Engine(e) => match request_fault(e) {
                Some("context") => ApiError::ContextLength { message: error.to_string() },
                Some(param) => ApiError::Invalid { param, message: error.to_string() },
                None => {
                    log::error!("the engine failed answering a request: {e}");
                    ApiError::Engine {
                        message: "the engine failed reading or running the model; the server's log has the details"
                            .into(),
                    }
                }
            },
            RuntimeError::NotAFolder { .. } | RuntimeError::VocabMismatch { .. } => {
                ApiError::Engine { message: "the model could not be opened".into() }
            }
            RuntimeError::NoModel | RuntimeError::WorkerGone => ApiError::NoModel,
            // The server queues only local replies; a remote failure would be an upstream's.
            RuntimeError::Remote { .. } => ApiError::Engine { message: "the upstream backend failed".into() },
            RuntimeError::Constraint(e) => ApiError::Invalid { param: "tools", message: e.to_string() },
        }
    }
}

/// The request field an engine error is the request's fault in (`context` for the context
/// length), or `None` when it is this machine's (files, model, drive: a server error).
fn request_fault(e: &k3_engine::Error) -> Option<&'static str> {
    use k3_engine::Error as E;
    match e {
        E::ContextLimit { .. } | E::PromptTooLong { .. } => Some("context"),
        E::Option { .. } => Some("sampling"),
        E::TokenId { .. } | E::Template { .. } | E::Empty { .. } => Some("messages"),
        E::Constraint { .. } => Some("tools"),
        E::Batch { source } => request_fault(source),
        E::Io { .. }
        | E::Read { .. }
        | E::ConfigSyntax { .. }
        | E::ConfigMissing { .. }
        | E::ConfigType { .. }
        | E::ConfigInvalid { .. }
        | E::Checkpoint { .. }
        | E::NoShards { .. }
        | E::MissingTensor { .. }
        | E::Shape { .. }
        | E::Dtype { .. }
        | E::Expert { .. }
        | E::Pack { .. }
        | E::Trunk { .. }
        | E::ExpertRead { .. }
        | E::ExpertChecksum { .. }
        | E::Stopped
        | E::Tokenizer { .. }
        | E::NonFiniteLogits { .. }
        | E::Budget(_)
        | E::OutputFolder { .. }
        | E::StateFile { .. } => None,
    }
}

/// At most `max` characters of `s`.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        match &self {
            ApiError::QueueFull { retry_after_seconds } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_seconds));
            }
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_the_openai_shape() {
        let all = [
            ApiError::BadJson { message: "x".into() },
            ApiError::Invalid { param: "top_p", message: "x".into() },
            ApiError::ContextLength { message: "x".into() },
            ApiError::UnsupportedMedia { message: "x".into() },
            ApiError::TooLarge { limit: 4 },
            ApiError::ModelNotFound { model: "m".repeat(1 << 20) },
            ApiError::NoModel,
            ApiError::Unauthorized,
            ApiError::ForbiddenHost,
            ApiError::ForbiddenOrigin,
            ApiError::QueueFull { retry_after_seconds: 5 },
            ApiError::NotFound,
            ApiError::MethodNotAllowed,
            ApiError::Engine { message: "x".into() },
        ];
        for e in all {
            let body = e.body();
            let err = &body["error"];
            assert!(err["message"].as_str().is_some_and(|m| !m.is_empty() && m.len() < 300), "{e:?}");
            assert!(err["type"].is_string() && err["code"].is_string(), "{e:?}");
            assert!(err.get("param").is_some(), "{e:?}");
            assert!(e.status().is_client_error() || e.status().is_server_error());
        }
    }

    #[test]
    fn a_fault_of_this_machine_is_a_server_error_without_its_paths() {
        let trunk = k3_engine::Error::Trunk { path: "/home/me/models/k3/trunk.json".into(), reason: "damaged".into() };
        let e = ApiError::from_runtime(&Arc::new(RuntimeError::Engine(trunk)));
        assert_eq!(e.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!e.body().to_string().contains("/home/me"), "{}", e.body());
        assert_eq!(e.body()["error"]["param"], Value::Null);
        let state = k3_engine::Error::StateFile { path: "/home/me/s.k3state".into(), reason: "x".into() };
        assert!(ApiError::from_runtime(&Arc::new(RuntimeError::Engine(state))).status().is_server_error());
        let batched = k3_engine::Error::Batch { source: Arc::new(k3_engine::Error::TokenId { id: 9, vocab_size: 4 }) };
        let e = ApiError::from_runtime(&Arc::new(RuntimeError::Engine(batched)));
        assert_eq!((e.status(), e.body()["error"]["param"].as_str()), (StatusCode::BAD_REQUEST, Some("messages")));
        let long = k3_engine::Error::ContextLimit { requested: 9, limit: 4 };
        assert_eq!(
            ApiError::from_runtime(&Arc::new(RuntimeError::Engine(long))).body()["error"]["code"],
            "context_length_exceeded"
        );
    }
}
