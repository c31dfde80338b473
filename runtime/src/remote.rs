//! The seam for replies generated elsewhere: a [`RemoteBackend`] (an OpenAI-compatible
//! endpoint; `k3-remote` implements it) answers a [`ChatTurn`] behind the same
//! [`ReplyHandler`] the local engine's replies use, so the window, history and exports
//! cannot tell them apart except by what the figures say.
//!
//! Owns: [`RemoteBackend`], what one remote answer is ([`RemoteAnswer`], [`RemoteFailure`]),
//! and [`run_remote_reply`]: `begin` → streamed text → exactly one `end`, with the figures a
//! remote has (tokens and timing; no I/O, hit rate or memory figures, which it does not
//! report).
//! Must not: wait on the engine worker's queue: a remote reply uses no local compute, so it
//! runs on its own thread beside local jobs. Know HTTP: this crate has no network code.

use std::time::{Duration, Instant};

use k3_engine::chat::Channel;
use k3_engine::StreamMetrics;
use k3_engine::{CancelToken, FinishReason};

use crate::figures::{seconds_per_token, LiveFigures, ReplyFigures};
use crate::handler::{ChatTurn, FinishedReply, JobId, ReplyHandler, ReplyOutcome, ReplyProgress};
use crate::RuntimeError;

/// A generator that runs on another machine.
pub trait RemoteBackend: Send + Sync {
    /// The host prompts are sent to, as the window names it ("gpu-box:8000").
    fn host(&self) -> String;
    /// Answers `turn`, handing each piece of the reply to `on_delta` as it arrives; stops as
    /// soon as `cancel` is set, returning what had arrived with [`FinishReason::Cancelled`].
    fn answer(
        &self,
        turn: &ChatTurn,
        cancel: &CancelToken,
        on_delta: &mut dyn FnMut(RemoteDelta<'_>),
    ) -> Result<RemoteAnswer, RemoteFailure>;
}

/// One piece of a remote reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteDelta<'a> {
    pub content: &'a str,
    /// Reasoning text (`reasoning_content` / `reasoning`), the think channel.
    pub reasoning: &'a str,
}

/// A remote reply that ended (or was stopped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAnswer {
    pub content: String,
    pub reasoning: String,
    pub finish: FinishReason,
    /// The server's own token counts `(prompt, completion)`, when it sent them.
    pub usage: Option<(u64, u64)>,
}

/// A remote reply that failed, with the message the window shows and what had arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFailure {
    pub message: String,
    pub partial: String,
}

/// How often live figures go out while a remote reply streams.
const FIGURES_EVERY: Duration = Duration::from_millis(100);

/// Runs job `id` on `backend`: the handler's `begin`, the streamed deltas, one `end`.
/// `cancel` is the job's token; `unregister` is called before the end.
pub(crate) fn run_remote_reply(
    id: JobId,
    backend: &dyn RemoteBackend,
    cancel: &CancelToken,
    handler: &mut dyn ReplyHandler,
    unregister: impl FnOnce(),
) {
    let Some(turn) = handler.begin(id) else {
        unregister();
        return handler.end(id, ReplyOutcome::Refused);
    };
    let host = backend.host();
    let mut stream = RemoteStream { id, handler, started: Instant::now(), deltas: 0, first_at: None, last: None };
    let result = if cancel.is_cancelled() {
        Ok(RemoteAnswer {
            content: String::new(),
            reasoning: String::new(),
            finish: FinishReason::Cancelled,
            usage: None,
        })
    } else {
        backend.answer(&turn, cancel, &mut |delta| stream.delta(delta))
    };
    stream.send_figures();
    let (deltas, first_at, total) = (stream.deltas, stream.first_at, stream.started.elapsed());
    unregister();
    let outcome = match result {
        Ok(answer) => {
            log::info!("remote reply {id} from {host}: {:?} after {} pieces", answer.finish, deltas);
            let figures = remote_figures(&answer, deltas, first_at.unwrap_or(total), total);
            ReplyOutcome::Finished(Box::new(FinishedReply {
                text: answer.content,
                think: Some(answer.reasoning).filter(|r| !r.is_empty()),
                tool_calls: Vec::new(),
                call_error: None,
                finish: answer.finish,
                figures,
                reused_history: false,
                generated: Vec::new(),
                remote_host: Some(host),
                state: None,
            }))
        }
        Err(failure) => {
            log::warn!("remote reply {id} from {host} failed: {}", failure.message);
            let error = std::sync::Arc::new(RuntimeError::Remote { host, message: failure.message });
            ReplyOutcome::Failed { error, partial_text: Some(failure.partial) }
        }
    };
    handler.end(id, outcome);
}

/// The streaming half of one remote reply.
struct RemoteStream<'a> {
    id: JobId,
    handler: &'a mut dyn ReplyHandler,
    started: Instant,
    deltas: usize,
    first_at: Option<Duration>,
    last: Option<Instant>,
}

impl RemoteStream<'_> {
    fn delta(&mut self, delta: RemoteDelta<'_>) {
        if delta.reasoning.is_empty() && delta.content.is_empty() {
            return;
        }
        self.first_at.get_or_insert_with(|| self.started.elapsed());
        let index = self.deltas;
        self.deltas += 1;
        for (text, channel) in [(delta.reasoning, Channel::Think), (delta.content, Channel::Response)] {
            if !text.is_empty() {
                self.handler.progress(self.id, ReplyProgress::Text { index, text: text.to_string(), channel });
            }
        }
        if self.last.is_none_or(|t| t.elapsed() >= FIGURES_EVERY) {
            self.send_figures();
        }
    }

    fn send_figures(&mut self) {
        let figures =
            LiveFigures::now(self.deltas, self.first_at, self.started.elapsed(), &StreamMetrics::default(), false);
        self.last = Some(Instant::now());
        self.handler.progress(self.id, ReplyProgress::Figures(figures));
    }
}

/// Figures of a remote reply: the server's token counts when it sent them (the client asks
/// for them with `stream_options.include_usage`), else the pieces with text received — a
/// lower bound, as a server may send several tokens in one piece; time to first piece and
/// decode seconds per token by the same formula as the local engine's.
fn remote_figures(answer: &RemoteAnswer, deltas: usize, first_at: Duration, total: Duration) -> ReplyFigures {
    let (prompt, output) = match answer.usage {
        Some((prompt, completion)) => (prompt as usize, completion as usize),
        None => (0, deltas),
    };
    ReplyFigures {
        prompt_tokens: prompt,
        prefilled_tokens: prompt,
        output_tokens: output,
        time_to_first_token: first_at,
        total,
        seconds_per_token: seconds_per_token(output, first_at, total),
        io_share: None,
        true_hit_rate: None,
        bytes_read: 0,
        io_wait: Duration::ZERO,
        peak_rss_bytes: None,
        metrics: StreamMetrics::default(),
        context_length: None,
    }
}
