//! One generation from admission to answer: queue it on the runtime, then collect it
//! into one JSON answer or stream it as SSE.
//!
//! Owns: the 429 when the queue is full, the [`JobGuard`] that stops the engine job when
//! the client goes away (the handler future or the SSE body is dropped by hyper when the
//! connection closes), and the SSE order: role chunk (chat), deltas, the final chunk with
//! `usage` — or a `data: {"error": …}` event — then `data: [DONE]`; `: keepalive`
//! comments while nothing else is sent (a long prefill).
//! Must not: send anything after `[DONE]`.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::api_error::ApiError;
use crate::reply::{ApiReply, ApiTurn, JobGuard, JobWatch, ReplyEvent};
use crate::response::{self, Endpoint, Head};
use crate::split::ReplyText;
use crate::state::AppState;

/// A generation queued on the runtime.
pub struct Generation {
    pub(crate) head: Head,
    pub(crate) events: UnboundedReceiver<ReplyEvent>,
    _guard: JobGuard,
}

/// Queues `turn`, or refuses with 429 when this server's queue is full.
pub fn start(
    state: &AppState,
    turn: ApiTurn,
    text: ReplyText,
    model: String,
    thinking: bool,
) -> Result<Generation, ApiError> {
    let Some(slot) = state.admission.try_admit() else {
        state.stats.queue_full();
        return Err(ApiError::QueueFull { retry_after_seconds: state.limits.retry_after_seconds });
    };
    let endpoint = match &turn {
        ApiTurn::Chat(_) => Endpoint::Chat,
        ApiTurn::Completion(_) => Endpoint::Completion,
    };
    let (tx, events) = unbounded_channel();
    let watch = JobWatch::new(state.stats.clone(), slot);
    let runtime = state.runtime.clone();
    let handler = Box::new(ApiReply::new(turn, text, tx, runtime.clone(), watch.clone()));
    let job = match endpoint {
        Endpoint::Chat | Endpoint::Messages => runtime.reply(handler),
        Endpoint::Completion => runtime.complete(handler),
    };
    state.stats.generation();
    let head = Head::new(job, model, endpoint, thinking);
    Ok(Generation { head, events, _guard: JobGuard { runtime, job, watch } })
}

impl Generation {
    /// The same generation answered in Anthropic's Messages shapes.
    pub fn answered_as_messages(mut self) -> Self {
        self.head.endpoint = Endpoint::Messages;
        self.head.id = self.head.id.replacen("chatcmpl-", "msg_", 1);
        self
    }

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

pub(crate) fn gone() -> ApiError {
    ApiError::Engine { message: "the engine worker stopped".into() }
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
