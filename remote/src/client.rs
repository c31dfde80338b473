//! One remote endpoint over HTTP: the models it serves and one streamed chat.
//!
//! `reqwest` with rustls (ring), certificates always verified — there is no switch to turn
//! that off. A connection that cannot be made is retried with backoff (0.5, 1, 2 s) before
//! the first byte of an answer; once a reply has begun nothing is retried (a second try would
//! write a different reply under the first one's text). Statuses become the messages the
//! window shows: 401/403 the key, 404 the URL or model id, 429 the server's limit (with its
//! `Retry-After`), 5xx the server's own error text.
//!
//! Must not: put the key in an error, a log line or a URL.

use std::time::Duration;

use reqwest::header::{HeaderValue, AUTHORIZATION, RETRY_AFTER};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

use crate::assemble::{assemble_watched, Delta, Ended, Failure, RemoteReply, Watch};

/// Where the remote is and how to be let in.
#[derive(Clone)]
pub struct Endpoint {
    /// The OpenAI base URL, ending in `/v1` (`https://host/v1`, `http://127.0.0.1:8000/v1`).
    pub base_url: String,
    /// The bearer key, when the endpoint wants one.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = if self.api_key.is_some() { "set" } else { "none" };
        f.debug_struct("Endpoint").field("base_url", &self.base_url).field("api_key", &key).finish()
    }
}

/// One message of the conversation, as the wire wants it.
#[derive(Debug, Clone, Serialize)]
pub struct WireMessage {
    pub role: &'static str,
    pub content: String,
}

/// What to ask for.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<WireMessage>,
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: Option<u64>,
}

/// Time limits of one request.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    /// From the request sent to the answer's status line.
    pub first_byte: Duration,
    /// Longest silence between two pieces of the body once it streams.
    pub between_pieces: Duration,
    /// Wait before the first retry of a connection that could not be made; each of the
    /// [`RETRIES`] doubles it.
    pub retry_backoff: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        // A remote engine may queue a request or prefill a long prompt before it answers.
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(300),
            between_pieces: Duration::from_secs(120),
            retry_backoff: Duration::from_millis(500),
        }
    }
}

/// Why a request to the remote failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    #[error("{url} is not an http(s) URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("cannot reach {url} after {attempts} tries: {message}")]
    Unreachable { url: String, attempts: u32, message: String },
    #[error("{url} did not answer within {seconds} s ({phase})")]
    TimedOut { url: String, phase: &'static str, seconds: u64 },
    #[error("{url} refused the API key (HTTP {status}): check the key in Settings › Backends")]
    Unauthorized { url: String, status: u16 },
    #[error("{url} answered 404: check the base URL (it ends in /v1) and the model id{}", detail(.message))]
    NotFound { url: String, message: String },
    #[error("{url} is rate-limiting this key (HTTP 429){}{}", .retry_after.map(|s| format!("; try again in {s} s")).unwrap_or_default(), detail(.message))]
    RateLimited { url: String, retry_after: Option<u64>, message: String },
    #[error("{url} failed (HTTP {status}){}", detail(.message))]
    Status { url: String, status: u16, message: String },
    #[error("{url}: {failure}", failure = .failure.error)]
    Stream { url: String, failure: Box<Failure> },
    #[error("{url} sent an answer this client cannot read: {message}")]
    BadAnswer { url: String, message: String },
}

fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

/// A client for one endpoint.
#[derive(Clone)]
pub struct RemoteClient {
    http: reqwest::Client,
    endpoint: Endpoint,
    timeouts: Timeouts,
}

/// Retries of a connection that could not be made (after waits of 1, 2 and 4 × the backoff).
pub const RETRIES: u32 = 3;

impl RemoteClient {
    pub fn new(endpoint: Endpoint, timeouts: Timeouts) -> Result<RemoteClient, RemoteError> {
        let parsed = reqwest::Url::parse(&endpoint.base_url)
            .map_err(|e| RemoteError::BadUrl { url: endpoint.base_url.clone(), reason: e.to_string() })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            let reason = format!("the scheme is {}", parsed.scheme());
            return Err(RemoteError::BadUrl { url: endpoint.base_url.clone(), reason });
        }
        // rustls needs one process-wide crypto provider; a second install is ignored.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("k3-desktop/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(|e| RemoteError::BadUrl { url: endpoint.base_url.clone(), reason: e.to_string() })?;
        Ok(RemoteClient { http, endpoint, timeouts })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.endpoint.base_url.trim_end_matches('/'))
    }

    fn authorized(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some(key) = &self.endpoint.api_key else { return req };
        match HeaderValue::from_str(&format!("Bearer {key}")) {
            Ok(mut v) => {
                v.set_sensitive(true);
                req.header(AUTHORIZATION, v)
            }
            Err(_) => req,
        }
    }

    /// The model ids `GET /models` lists.
    pub async fn models(&self) -> Result<Vec<String>, RemoteError> {
        let url = self.url("models");
        let response = self.send(&url, || self.authorized(self.http.get(&url))).await?;
        let body =
            response.bytes().await.map_err(|e| RemoteError::BadAnswer { url: url.clone(), message: e.to_string() })?;
        let list: ModelList = serde_json::from_slice(&body)
            .map_err(|e| RemoteError::BadAnswer { url: url.clone(), message: format!("not a model list: {e}") })?;
        Ok(list.data.into_iter().map(|m| m.id).collect())
    }

    /// Streams one chat reply, handing each delta to `on_delta`; stops (and drops the
    /// connection, which a server takes as a cancel) as soon as `cancelled()` says so, with the
    /// partial text.
    pub async fn chat(
        &self,
        request: &ChatRequest,
        cancelled: impl Fn() -> bool + Sync,
        on_delta: impl FnMut(&Delta),
    ) -> Result<Outcome, RemoteError> {
        let url = self.url("chat/completions");
        let body = serde_json::json!({
            "model": request.model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        let response = self.send(&url, || self.authorized(self.http.post(&url).json(&body))).await?;
        let watch = Watch { silence: self.timeouts.between_pieces, cancelled: &cancelled };
        match assemble_watched(response.bytes_stream(), watch, on_delta).await {
            Ok(Ended::Reply(reply)) => Ok(Outcome::Finished(reply)),
            Ok(Ended::Cancelled(partial)) => Ok(Outcome::Cancelled(partial)),
            Err(failure) => Err(RemoteError::Stream { url, failure: Box::new(failure) }),
        }
    }

    /// Sends (retrying connections that could not be made) and maps statuses to errors.
    async fn send(
        &self,
        url: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, RemoteError> {
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            match tokio::time::timeout(self.timeouts.first_byte, build().send()).await {
                Err(_) => {
                    let seconds = self.timeouts.first_byte.as_secs();
                    return Err(RemoteError::TimedOut {
                        url: url.to_string(),
                        phase: "waiting for the answer",
                        seconds,
                    });
                }
                Ok(Ok(r)) => break r,
                Ok(Err(e)) if e.is_connect() && attempt <= RETRIES => {
                    tokio::time::sleep(self.timeouts.retry_backoff * (1 << (attempt - 1))).await;
                }
                Ok(Err(e)) => {
                    let message = without_url(&e);
                    return Err(RemoteError::Unreachable { url: url.to_string(), attempts: attempt, message });
                }
            }
        };
        status_error(url, response).await
    }
}

/// How a chat ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Finished(RemoteReply),
    /// Stopped by the caller, with the text so far.
    Cancelled(Delta),
}

/// reqwest's message without the URL it appends (the caller names the URL once).
fn without_url(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut deepest = e.to_string();
    while let Some(s) = source {
        deepest = s.to_string();
        source = s.source();
    }
    deepest
}

async fn status_error(url: &str, response: reqwest::Response) -> Result<reqwest::Response, RemoteError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after =
        response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|s| s.trim().parse().ok());
    let text = response.text().await.unwrap_or_default();
    let message = error_message(&text);
    let url = url.to_string();
    Err(match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => RemoteError::Unauthorized { url, status: status.as_u16() },
        StatusCode::NOT_FOUND => RemoteError::NotFound { url, message },
        StatusCode::TOO_MANY_REQUESTS => RemoteError::RateLimited { url, retry_after, message },
        _ => RemoteError::Status { url, status: status.as_u16(), message },
    })
}

/// The `error.message` of an OpenAI-style error body, else its first 200 characters.
fn error_message(body: &str) -> String {
    #[derive(Deserialize)]
    struct Envelope {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        message: String,
    }
    match serde_json::from_str::<Envelope>(body) {
        Ok(e) => e.error.message,
        Err(_) => body.trim().chars().take(200).collect(),
    }
}
