//! k3-runtime: the long-lived host of one loaded engine, shared by the desktop app, the
//! `k3` CLI and the local API server, so each of them is an adapter and none a copy.
//!
//! Bird's-eye view: [`Runtime`] starts one worker thread that owns the [`LoadedModel`]
//! and runs jobs FIFO — model opens, replies, replans — with cancel tokens registered
//! before a job is queued; replies next to each other in the queue run together, up to
//! the runtime's batch ([`together`]), sharing the engine's forward passes. A reply's front end is a [`ReplyHandler`]: it hands over the
//! [`ChatTurn`] when the job starts, hears progress while the engine runs, and gets one
//! [`ReplyOutcome`]. A reply may instead go to a [`RemoteBackend`] (another machine's
//! OpenAI-compatible server) behind the same handler, on a thread of its own.
//! [`MetricsProbe`] is readable at any time, also mid-reply.
//! Opening a model folder ([`model`]), the figures derived from a generation
//! ([`figures`]) and which tokens are visible text ([`text`]) are defined here once.
//!
//! Invariants: this crate knows nothing of Tauri, JSON wire formats, HTTP or SQLite;
//! results reach storage only through the handler a front end implements. No `unsafe`.
#![forbid(unsafe_code)]

pub mod chat;
mod complete;
pub mod count;
pub mod error;
pub mod figures;
pub mod handler;
mod job;
pub mod kept;
mod key;
pub mod model;
pub mod probe;
pub mod remote;
mod sink;
mod together;
mod worker;

pub use count::PromptCounter;
pub use error::RuntimeError;
pub use figures::{LiveFigures, ReplyFigures};
pub use handler::{
    ChatTurn, CompletionTurn, FinishedReply, JobId, ReplyHandler, ReplyOutcome, ReplyProgress, StateNote,
};
pub use job::{ReplanProgress, ReplanRequest};
pub use k3_engine::chat::Channel;
pub use kept::{KeptOnDisk, KeptSource};
pub use key::ConversationKey;
pub use model::{LoadedModel, ModelRequest, ModelSummary};
pub use probe::{Activity, MetricsProbe, OpenFailure, ProbeSnapshot, TokenSample, TIMELINE_TOKENS};
pub use remote::{RemoteAnswer, RemoteBackend, RemoteDelta, RemoteFailure};
pub use worker::Runtime;

/// Locks `m`, also after a thread panicked holding it (the data stays usable).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
