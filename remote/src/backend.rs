//! [`RemoteChat`]: one endpoint and model id as the runtime's [`RemoteBackend`], so a
//! conversation set to a remote is answered behind the same reply handler as a local one.
//!
//! Owns: the conversation turn as OpenAI messages (system, history, the new user message;
//! the think channel of earlier replies is not sent back, as OpenAI-style servers expect),
//! sampling as the wire's fields (greedy = temperature 0), running the async client on the
//! reply's own thread, and its outcome as the runtime's answer or failure.
//! Must not: send anything but the turn it is given; name the key anywhere.

use k3_engine::chat::Role;
use k3_engine::{CancelToken, FinishReason as EngineFinish, Sampling};
use k3_runtime::{ChatTurn, RemoteAnswer, RemoteBackend, RemoteDelta, RemoteFailure};

use crate::chunk::FinishReason;
use crate::client::{ChatRequest, Endpoint, Outcome, RemoteClient, RemoteError, Timeouts, WireMessage};

/// A model on a remote endpoint.
pub struct RemoteChat {
    client: RemoteClient,
    model: String,
    host: String,
}

impl RemoteChat {
    /// A backend answering with `model` on `endpoint`.
    pub fn new(endpoint: Endpoint, model: String, timeouts: Timeouts) -> Result<RemoteChat, RemoteError> {
        let host = host_of(&endpoint.base_url);
        Ok(RemoteChat { client: RemoteClient::new(endpoint, timeouts)?, model, host })
    }

    /// The model id requests ask for.
    pub fn model(&self) -> &str {
        &self.model
    }
}

/// `host[:port]` of a base URL (the whole URL when it has none).
pub fn host_of(base_url: &str) -> String {
    match reqwest::Url::parse(base_url) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => base_url.to_string(),
        },
        Err(_) => base_url.to_string(),
    }
}

/// The request for `turn` to `model`.
pub fn chat_request(turn: &ChatTurn, model: &str) -> ChatRequest {
    let mut messages = Vec::with_capacity(turn.history.len() + 2);
    if let Some(system) = &turn.system {
        messages.push(WireMessage { role: "system", content: system.clone() });
    }
    // A remote backend answers text conversations: a tool result is sent as the user's
    // text (the app's window sends no tools to a remote backend).
    for m in turn.history.iter().chain(&turn.input.messages) {
        let role = match m.role {
            Role::System => "system",
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
        };
        messages.push(WireMessage { role, content: m.content.clone() });
    }
    let (temperature, top_p, seed) = match turn.params.sampling {
        Sampling::Greedy => (0.0, 1.0, None),
        Sampling::TopP { temperature, top_p, seed } => (temperature, top_p, Some(seed)),
    };
    let max_tokens = u32::try_from(turn.params.max_new_tokens).unwrap_or(u32::MAX);
    ChatRequest { model: model.to_string(), messages, max_tokens, temperature, top_p, seed }
}

impl RemoteBackend for RemoteChat {
    fn host(&self) -> String {
        self.host.clone()
    }

    fn answer(
        &self,
        turn: &ChatTurn,
        cancel: &CancelToken,
        on_delta: &mut dyn FnMut(RemoteDelta<'_>),
    ) -> Result<RemoteAnswer, RemoteFailure> {
        let request = chat_request(turn, &self.model);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
            RemoteFailure { message: format!("cannot start the HTTP client: {e}"), partial: String::new() }
        })?;
        let chat = self.client.chat(
            &request,
            || cancel.is_cancelled(),
            |delta| on_delta(RemoteDelta { content: &delta.content, reasoning: &delta.reasoning }),
        );
        match runtime.block_on(chat) {
            Ok(Outcome::Finished(reply)) => Ok(RemoteAnswer {
                content: reply.content,
                reasoning: reply.reasoning,
                finish: engine_finish(&reply.finish),
                usage: reply.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
            }),
            Ok(Outcome::Cancelled(partial)) => Ok(RemoteAnswer {
                content: partial.content,
                reasoning: partial.reasoning,
                finish: EngineFinish::Cancelled,
                usage: None,
            }),
            Err(error) => {
                let partial = match &error {
                    RemoteError::Stream { failure, .. } => failure.partial.content.clone(),
                    _ => String::new(),
                };
                Err(RemoteFailure { message: error.to_string(), partial })
            }
        }
    }
}

/// The engine's finish reason for the server's (`content_filter` and other server-side
/// ends are a stop: the reply is what the server chose to send).
fn engine_finish(finish: &FinishReason) -> EngineFinish {
    match finish {
        FinishReason::Stop | FinishReason::Other(_) => EngineFinish::Stop,
        FinishReason::Length => EngineFinish::Length,
    }
}
