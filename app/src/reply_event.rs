//! [`ReplyEvent`]: what a reply of the app's worker tells as it runs: queued, started,
//! prefill progress, each token, figures, and how it ended; and [`ReplyEmitter`], where
//! they go (the window's channel, a vector in tests).
//!
//! Must not: block the worker: an emitter whose receiver is gone drops the event and the
//! reply still completes and is saved.

use crate::error::AppError;
use crate::history::{FinishReason, Message};

/// What a reply tells as it runs (the window streams each as a `GenerationEvent`).
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyEvent {
    Queued {
        job_id: u64,
        position: u32,
    },
    Started {
        job_id: u64,
        conversation_id: i64,
        user_message: Option<Message>,
    },
    PrefillProgress {
        job_id: u64,
        done: u32,
        total: u32,
    },
    /// Visible text completed by generated token `index`; `think` when it belongs to the
    /// thinking channel (shown apart from the answer).
    Token {
        job_id: u64,
        index: u32,
        text: String,
        think: bool,
    },
    Stats {
        job_id: u64,
        tokens: u32,
        elapsed_ms: u64,
        seconds_per_token: Option<f64>,
        io_share: Option<f64>,
        true_hit_rate: Option<f64>,
    },
    Finished {
        job_id: u64,
        reason: FinishReason,
        message: Message,
    },
    Failed {
        job_id: u64,
        error: AppError,
        message: Option<Message>,
    },
}

impl ReplyEvent {
    /// True for the event that ends a job (`finished` or `failed`); nothing follows it.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ReplyEvent::Finished { .. } | ReplyEvent::Failed { .. })
    }
}

/// Where a reply's events go.
pub type ReplyEmitter = Box<dyn FnMut(ReplyEvent) + Send>;
