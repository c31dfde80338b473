//! What a front end gives the runtime for one reply, and what it gets back.
//!
//! Owns: [`ReplyHandler`] (the app implements it with its history store and event
//! channel, the CLI with stdout, the server with an HTTP stream), the [`ChatTurn`] a
//! handler hands over when the job starts, the progress it receives while the engine
//! runs, and the [`ReplyOutcome`] that ends the job.
//! Must not: carry wire or storage types: handlers convert at their edge.
//! Easy to break: every job gets exactly one `end`, and the job's cancel token is gone
//! before it (a client that saw the end finds nothing left to cancel).

use std::sync::Arc;

use k3_engine::chat::{
    declared_tool_specs, CallDelta, CallError, Channel, ChatMessage, ChatMode, ToolCall, ToolSpec, TurnInput,
};
use k3_engine::{FinishReason, GenerateParams};

use crate::error::RuntimeError;
use crate::figures::{LiveFigures, ReplyFigures};

/// A job's id, unique within one runtime.
pub type JobId = u64;

/// The conversation turn to answer.
#[derive(Debug, Clone)]
pub struct ChatTurn {
    /// Identifies the conversation across turns (engine state is reused only for the
    /// same key, the same system prompt, mode and history).
    pub conversation: crate::ConversationKey,
    pub system: Option<String>,
    pub mode: ChatMode,
    /// The messages before this turn's input (up to and with the last reply).
    pub history: Vec<ChatMessage>,
    /// What this turn sends: a user message or tool results, the options (tools,
    /// effort, tool choice, response format) and the prefix of its calls' ids.
    pub input: TurnInput,
    pub params: GenerateParams,
    /// Where this conversation's engine state is saved when a reply ends and read back
    /// when the session in RAM is another's (after a restart): the next turn then
    /// prefills only its message. `None`: nothing is saved.
    pub state_file: Option<std::path::PathBuf>,
}

/// A raw continuation (no chat template, no engine state kept): the prompt is encoded
/// with the model's tokenizer as `k3 run --prompt` encodes it.
#[derive(Debug, Clone)]
pub struct CompletionTurn {
    pub prompt: String,
    pub params: GenerateParams,
}

/// Progress of a running reply.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyProgress {
    /// Prompt positions fed so far (per 64-token chunk of a long prefill, then once done).
    Prefill { done: usize, total: usize },
    /// Visible text completed by generated token `index`, in `channel`
    /// (`k3_engine::chat::ReplyReader` decides both); one per generated token, empty when
    /// the token is markup or the first bytes of a character.
    Text { index: usize, text: String, channel: Channel },
    /// A tool call forming in the reply: its id and tool when it opens, then fragments
    /// of its arguments (JSON text), sent after the token's `Text`.
    ToolCall(CallDelta),
    /// Live figures, at most every 100 ms and once at the end.
    Figures(LiveFigures),
}

impl ChatTurn {
    /// The tools this turn's reply may call: the request's and its system messages'.
    pub fn declared_tools(&self) -> Vec<ToolSpec> {
        declared_tool_specs(self.history.iter().chain(&self.input.messages), &self.input.options)
    }
}

/// A reply that ran to its end (or was stopped: `finish` says which).
#[derive(Debug, Clone)]
pub struct FinishedReply {
    /// The response text (closing markers removed).
    pub text: String,
    /// The think channel of a thinking-mode reply.
    pub think: Option<String>,
    /// The reply's tool calls, in order (none for a remote reply).
    pub tool_calls: Vec<ToolCall>,
    /// What is wrong with the model's tool calls, when something is (then none is to
    /// be run).
    pub call_error: Option<CallError>,
    pub finish: FinishReason,
    pub figures: ReplyFigures,
    /// True when the engine state of earlier turns was reused.
    pub reused_history: bool,
    /// The generated token ids, in order (a stop id included when it ended the reply);
    /// empty for a remote reply (its server does not send ids).
    pub generated: Vec<u32>,
    /// The host a remote backend answered from; `None` for the local engine.
    pub remote_host: Option<String>,
    /// What happened to the turn's saved state, when it has a state file: resumed from it,
    /// refused (and why: the history was replayed instead), or a failed save.
    pub state: Option<StateNote>,
}

/// What a chat turn did with its state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateNote {
    /// The session was read from the file; only the new message was prefilled.
    Resumed,
    /// The file could not serve this turn (the reason); the history was replayed.
    Refused(String),
    /// The reply is fine, but saving its state failed (the reason).
    SaveFailed(String),
    /// The session in RAM served the turn; the file was written again.
    Saved,
}

/// How a job ended.
#[derive(Debug)]
pub enum ReplyOutcome {
    Finished(Box<FinishedReply>),
    /// The engine (or the runtime) failed; `partial_text` is what had streamed when the
    /// engine had started.
    Failed {
        error: Arc<RuntimeError>,
        partial_text: Option<String>,
    },
    /// [`ReplyHandler::begin`] returned `None`: the handler knows why.
    Refused,
}

/// One reply's front end.
pub trait ReplyHandler: Send {
    /// The job was queued behind `position` replies not yet ended (the one running, if any,
    /// and those waiting).
    fn queued(&mut self, job: JobId, position: usize);
    /// The job reached the engine: make its effects (e.g. commit the user message) and
    /// return the turn to answer, or `None` to refuse it.
    fn begin(&mut self, job: JobId) -> Option<ChatTurn>;
    /// A job queued with [`crate::Runtime::complete`] reached the engine: the prompt to
    /// continue, or `None` to refuse it. Handlers that only chat keep the default.
    fn begin_completion(&mut self, _job: JobId) -> Option<CompletionTurn> {
        None
    }
    fn progress(&mut self, job: JobId, progress: ReplyProgress);
    /// The job ended; nothing follows.
    fn end(&mut self, job: JobId, outcome: ReplyOutcome);
}
