//! [`ApiReply`]: the server's `ReplyHandler` — one generation's text and outcome, sent
//! from the engine thread to the HTTP side over a channel.
//!
//! Owns: splitting and stop-cutting the text as it streams ([`ReplyText`]), stopping the
//! engine job when a stop string completes, the finish reason and token ids the client
//! gets (cut at the token that completed the stop string), and the [`JobWatch`] that
//! times a cancel-on-disconnect.
//! Must not: block the engine thread (the channel is unbounded; its length is bounded by
//! the reply's max tokens), or free its admission [`Slot`] before the job's `end` — unless
//! the client left while the job was still queued, which the job's `begin` then refuses.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use k3_engine::chat::{CallDelta, ToolCall};
use k3_engine::FinishReason;
use k3_runtime::{
    ChatTurn, CompletionTurn, FinishedReply, JobId, ReplyFigures, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime,
};
use tokio::sync::mpsc::UnboundedSender;

use crate::api_error::ApiError;
use crate::queue::Slot;
use crate::split::{Delta, ReplyText};
use crate::stats::ServerStats;

/// What the engine side tells the HTTP side.
#[derive(Debug)]
pub enum ReplyEvent {
    Delta(Delta),
    /// A tool call forming (its id and name, then argument fragments).
    Call(CallDelta),
    Done(Box<Done>),
    Failed(ApiError),
}

/// The end of a generation as the API reports it.
#[derive(Debug)]
pub struct Done {
    pub finish: &'static str,
    pub figures: ReplyFigures,
    pub token_ids: Vec<u32>,
    /// The whole `content` and `reasoning_content` (what the deltas added up to).
    pub content: String,
    pub reasoning: String,
    /// The tool calls (what the call deltas added up to).
    pub tool_calls: Vec<ToolCall>,
}

/// The turn an [`ApiReply`] hands over.
#[derive(Debug)]
pub enum ApiTurn {
    Chat(Box<ChatTurn>),
    Completion(CompletionTurn),
}

/// Where a generation is, as the handler and the HTTP side both see it.
const QUEUED: u8 = 0;
const STARTED: u8 = 1;
/// The client left before the engine took the job: it will never run.
const ABANDONED: u8 = 2;

/// Shared by the handler and the HTTP side: when the client left, whether the job started
/// or ended, and the admission [`Slot`] (freed when the job ends, or at once when the
/// client leaves a job still queued: it will never run, so it must not count against the
/// queue until the jobs ahead of it end — probe finding).
#[derive(Debug)]
pub struct JobWatch {
    left_at: Mutex<Option<Instant>>,
    ended: AtomicBool,
    state: AtomicU8,
    slot: Mutex<Option<Slot>>,
    stats: Arc<ServerStats>,
}

impl JobWatch {
    pub fn new(stats: Arc<ServerStats>, slot: Slot) -> Arc<Self> {
        Arc::new(JobWatch {
            left_at: Mutex::new(None),
            ended: AtomicBool::new(false),
            state: AtomicU8::new(QUEUED),
            slot: Mutex::new(Some(slot)),
            stats,
        })
    }

    /// The client went away: returns true when the job still runs (so it must be stopped).
    /// A job the engine has not taken yet is abandoned here: its slot is freed now and its
    /// cancel counted as immediate.
    pub fn client_left(&self) -> bool {
        let mut left = self.left_at.lock().unwrap_or_else(|p| p.into_inner());
        left.get_or_insert_with(Instant::now);
        drop(left);
        if self.state.compare_exchange(QUEUED, ABANDONED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.job_ended();
            return false;
        }
        !self.ended.load(Ordering::Acquire)
    }

    /// The engine takes the job: false when its client already left (the job is refused).
    fn start(&self) -> bool {
        self.state.compare_exchange(QUEUED, STARTED, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    fn job_ended(&self) {
        let left = self.left_at.lock().unwrap_or_else(|p| p.into_inner());
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(at) = *left {
            self.stats.disconnect_cancelled(at.elapsed());
        }
        drop(left);
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// One generation of the API.
pub struct ApiReply {
    turn: Option<ApiTurn>,
    text: ReplyText,
    events: UnboundedSender<ReplyEvent>,
    runtime: Arc<Runtime>,
    watch: Arc<JobWatch>,
    /// The index of the token that completed a stop string.
    stop_token: Option<usize>,
}

impl ApiReply {
    pub fn new(
        turn: ApiTurn,
        text: ReplyText,
        events: UnboundedSender<ReplyEvent>,
        runtime: Arc<Runtime>,
        watch: Arc<JobWatch>,
    ) -> Self {
        ApiReply { turn: Some(turn), text, events, runtime, watch, stop_token: None }
    }

    fn send(&self, event: ReplyEvent) {
        // The receiver is gone when the client left: the job is being cancelled.
        let _ = self.events.send(event);
    }

    /// The end of a reply; malformed tool calls are the model's error, never repaired.
    fn done(&mut self, reply: FinishedReply) -> Result<Done, ApiError> {
        if let Some(error) = &reply.call_error {
            return Err(ApiError::ModelOutput { message: error.to_string() });
        }
        let rest = self.text.finish(reply.think.as_deref(), &reply.text);
        if !rest.is_empty() {
            self.send(ReplyEvent::Delta(rest));
        }
        let mut token_ids = reply.generated;
        if let Some(last) = self.stop_token {
            token_ids.truncate(last + 1);
        }
        let finish = match (self.text.stopped(), reply.finish) {
            (false, FinishReason::Stop) if !reply.tool_calls.is_empty() => "tool_calls",
            (true, _) | (false, FinishReason::Stop | FinishReason::Cancelled) => "stop",
            (false, FinishReason::Length | FinishReason::ContextFull) => "length",
        };
        let content = self.text.content().to_string();
        let reasoning = self.text.reasoning().to_string();
        Ok(Done { finish, figures: reply.figures, token_ids, content, reasoning, tool_calls: reply.tool_calls })
    }
}

impl ReplyHandler for ApiReply {
    fn queued(&mut self, _job: JobId, _position: usize) {}

    fn begin(&mut self, _job: JobId) -> Option<ChatTurn> {
        if !self.watch.start() {
            return None;
        }
        match self.turn.take() {
            Some(ApiTurn::Chat(turn)) => Some(*turn),
            Some(ApiTurn::Completion(_)) | None => None,
        }
    }

    fn begin_completion(&mut self, _job: JobId) -> Option<CompletionTurn> {
        if !self.watch.start() {
            return None;
        }
        match self.turn.take() {
            Some(ApiTurn::Completion(turn)) => Some(turn),
            Some(ApiTurn::Chat(_)) | None => None,
        }
    }

    fn progress(&mut self, job: JobId, progress: ReplyProgress) {
        let (index, text, channel) = match progress {
            ReplyProgress::Text { index, text, channel } => (index, text, channel),
            ReplyProgress::ToolCall(delta) if !self.text.stopped() => return self.send(ReplyEvent::Call(delta)),
            ReplyProgress::ToolCall(_) | ReplyProgress::Prefill { .. } | ReplyProgress::Figures(_) => return,
        };
        if self.text.stopped() {
            return;
        }
        let delta = self.text.push(&text, channel);
        if self.text.stopped() {
            self.stop_token = Some(index);
            self.runtime.cancel(job);
        }
        if !delta.is_empty() {
            self.send(ReplyEvent::Delta(delta));
        }
    }

    fn end(&mut self, _job: JobId, outcome: ReplyOutcome) {
        let event = match outcome {
            ReplyOutcome::Finished(reply) => match self.done(*reply) {
                Ok(done) => ReplyEvent::Done(Box::new(done)),
                Err(e) => ReplyEvent::Failed(e),
            },
            ReplyOutcome::Failed { error, .. } => ReplyEvent::Failed(ApiError::from_runtime(&error)),
            ReplyOutcome::Refused => ReplyEvent::Failed(ApiError::Engine { message: "the job was refused".into() }),
        };
        self.watch.job_ended();
        self.send(event);
    }
}

/// Stops the job when dropped before its end (the client went away).
pub struct JobGuard {
    pub runtime: Arc<Runtime>,
    pub job: JobId,
    pub watch: Arc<JobWatch>,
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        if self.watch.client_left() {
            self.runtime.cancel(self.job);
        }
    }
}
