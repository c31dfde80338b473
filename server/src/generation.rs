//! One generation from admission on: queue it on the runtime (answering it, as JSON or
//! SSE, is `answer`'s).
//!
//! Owns: [`Generation`], the 429 when the queue is full, and the [`JobGuard`] that stops
//! the engine job when the client goes away (the handler future or the SSE body is dropped
//! by hyper when the connection closes).

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::api_error::ApiError;
use crate::head::{Endpoint, Head};
use crate::reply::{ApiReply, ApiTurn, JobGuard, JobWatch, ReplyEvent};
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
}

pub(crate) fn gone() -> ApiError {
    ApiError::Engine { message: "the engine worker stopped".into() }
}
