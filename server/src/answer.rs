//! A generation answered: collected into one JSON answer, or streamed as SSE in the
//! endpoint's shapes (OpenAI's here, Anthropic's in `anthropic::stream`).
//!
//! Owns: [`answer`] (a prepared generation or its refusal as the response), the header
//! naming ignored fields ([`with_ignored`]), and the SSE order: role chunk (chat), deltas, the final chunk with `usage` — or a
//! `data: {"error": …}` event — then `data: [DONE]`; `: keepalive` comments while nothing
//! else is sent (a long prefill).
//! Must not: send anything after `[DONE]`.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::Stream;
use serde_json::Value;

use crate::api_error::ApiError;
use crate::generation::{gone, Generation};
use crate::head::{Endpoint, Head};
use crate::reply::ReplyEvent;
use crate::response;
use crate::state::AppState;

/// A prepared generation answered as SSE (`stream: true`) or as one JSON body; a refusal
/// as its error.
pub(crate) async fn answer(state: &AppState, prepared: Result<(Generation, bool), ApiError>) -> Response {
    match prepared {
        Ok((generation, true)) => generation.stream(state),
        Ok((generation, false)) => generation.collect().await,
        Err(e) => e.into_response(),
    }
}

/// `response` with the fields the request named that this server ignores, when there are any
/// ([`crate::request::IGNORED_FIELDS_HEADER`]).
pub(crate) fn with_ignored(mut response: Response, ignored: &[String]) -> Response {
    if let Ok(value) = axum::http::HeaderValue::from_str(&ignored.join(", ")) {
        if !ignored.is_empty() {
            response.headers_mut().insert(crate::request::IGNORED_FIELDS_HEADER, value);
        }
    }
    response
}

impl Generation {
    /// The whole answer (non-streaming).
    pub async fn collect(mut self) -> Response {
        let failed = |head: &Head, e: ApiError| match head.endpoint {
            Endpoint::Messages => crate::anthropic::response::error_response(&e),
            Endpoint::Chat | Endpoint::Completion => e.into_response(),
        };
        loop {
            match self.events.recv().await {
                Some(ReplyEvent::Delta(_) | ReplyEvent::Call(_)) => {}
                Some(ReplyEvent::Done(done)) => return Json(response::complete(&self.head, &done)).into_response(),
                Some(ReplyEvent::Failed(e)) => return failed(&self.head, e),
                None => return failed(&self.head, gone()),
            }
        }
    }

    /// The answer as server-sent events.
    pub fn stream(self, state: &AppState) -> Response {
        let keepalive = KeepAlive::new().interval(state.limits.keepalive_interval).text("keepalive");
        match self.head.endpoint {
            Endpoint::Messages => {
                Sse::new(crate::anthropic::stream::events(self)).keep_alive(keepalive).into_response()
            }
            Endpoint::Chat | Endpoint::Completion => Sse::new(events(self)).keep_alive(keepalive).into_response(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Events,
    Last,
    Finished,
}

fn data(value: &Value) -> Result<Event, Infallible> {
    Ok(Event::default().data(value.to_string()))
}

/// The SSE events of `generation`; dropping the stream stops the job.
fn events(generation: Generation) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold((generation, Phase::Start), |(mut g, phase)| async move {
        match phase {
            Phase::Start if g.head.endpoint == Endpoint::Chat => {
                let first = data(&response::role_chunk(&g.head));
                Some((first, (g, Phase::Events)))
            }
            Phase::Start | Phase::Events => {
                let (event, next) = match g.events.recv().await {
                    Some(ReplyEvent::Delta(d)) => (data(&response::delta_chunk(&g.head, &d)), Phase::Events),
                    Some(ReplyEvent::Call(c)) => (data(&response::call_chunk(&g.head, &c)), Phase::Events),
                    Some(ReplyEvent::Done(done)) => (data(&response::final_chunk(&g.head, &done)), Phase::Last),
                    Some(ReplyEvent::Failed(e)) => (data(&e.body()), Phase::Last),
                    None => (data(&gone().body()), Phase::Last),
                };
                Some((event, (g, next)))
            }
            Phase::Last => Some((Ok(Event::default().data("[DONE]")), (g, Phase::Finished))),
            Phase::Finished => None,
        }
    })
}
