//! Generation events: the typed stream a generation sends over its `tauri::ipc::Channel`.
//!
//! Owns: [`GenerationEvent`] (tagged by `type`, camelCase fields), the wire twin of
//! `k3_app::reply_event::ReplyEvent`; [`channel_emitter`] adapts a Tauri channel to the
//! worker's `ReplyEmitter`.
//! Must not: block the worker: a closed or failing channel (window gone) is ignored and
//! the generation still completes and is saved.
//! Easy to break: the UI's reducer switches exhaustively on `type`; adding a variant
//! needs a case there (the TS freshness test regenerates the union).

use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use ts_rs::TS;

use k3_app::reply_event::{ReplyEmitter, ReplyEvent};

use crate::ipc::dto::{FinishReason, Message};
use crate::ipc::error::IpcError;
use crate::ipc::twin::ToWire;

/// Streamed over the `onEvent` channel of `send_message`, `regenerate` and `edit_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum GenerationEvent {
    Queued {
        #[ts(type = "number")]
        job_id: u64,
        position: u32,
    },
    Started {
        #[ts(type = "number")]
        job_id: u64,
        #[ts(type = "number")]
        conversation_id: i64,
        user_message: Option<Message>,
    },
    PrefillProgress {
        #[ts(type = "number")]
        job_id: u64,
        done: u32,
        total: u32,
    },
    /// Visible text completed by generated token `index`; `think` when it belongs to the
    /// thinking channel (shown apart from the answer).
    Token {
        #[ts(type = "number")]
        job_id: u64,
        index: u32,
        text: String,
        think: bool,
    },
    Stats {
        #[ts(type = "number")]
        job_id: u64,
        tokens: u32,
        #[ts(type = "number")]
        elapsed_ms: u64,
        seconds_per_token: Option<f64>,
        io_share: Option<f64>,
        true_hit_rate: Option<f64>,
    },
    Finished {
        #[ts(type = "number")]
        job_id: u64,
        reason: FinishReason,
        message: Message,
    },
    Failed {
        #[ts(type = "number")]
        job_id: u64,
        error: IpcError,
        message: Option<Message>,
    },
}

impl From<ReplyEvent> for GenerationEvent {
    fn from(event: ReplyEvent) -> Self {
        match event {
            ReplyEvent::Queued { job_id, position } => GenerationEvent::Queued { job_id, position },
            ReplyEvent::Started { job_id, conversation_id, user_message } => {
                GenerationEvent::Started { job_id, conversation_id, user_message: user_message.to_wire() }
            }
            ReplyEvent::PrefillProgress { job_id, done, total } => {
                GenerationEvent::PrefillProgress { job_id, done, total }
            }
            ReplyEvent::Token { job_id, index, text, think } => GenerationEvent::Token { job_id, index, text, think },
            ReplyEvent::Stats { job_id, tokens, elapsed_ms, seconds_per_token, io_share, true_hit_rate } => {
                GenerationEvent::Stats { job_id, tokens, elapsed_ms, seconds_per_token, io_share, true_hit_rate }
            }
            ReplyEvent::Finished { job_id, reason, message } => {
                GenerationEvent::Finished { job_id, reason: reason.to_wire(), message: message.to_wire() }
            }
            ReplyEvent::Failed { job_id, error, message } => {
                GenerationEvent::Failed { job_id, error: error.into(), message: message.to_wire() }
            }
        }
    }
}

/// Sends every reply event over `channel` as its wire twin; a send that fails (the window
/// closed) is dropped.
pub fn channel_emitter(channel: Channel<GenerationEvent>) -> ReplyEmitter {
    Box::new(move |event| {
        let _ = channel.send(GenerationEvent::from(event));
    })
}
