//! Generation events: the typed stream a generation sends over its `tauri::ipc::Channel`.
//!
//! Owns: [`GenerationEvent`] (tagged by `type`, camelCase fields) and [`EventEmitter`],
//! the sending end the worker holds; [`channel_emitter`] adapts a Tauri channel to it.
//! Must not: block the worker: a closed or failing channel (window gone) is ignored and
//! the generation still completes and is saved.
//! Easy to break: the UI's reducer switches exhaustively on `type`; adding a variant
//! needs a case there (the TS freshness test regenerates the union).

use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use ts_rs::TS;

use crate::ipc::dto::{FinishReason, Message};
use crate::ipc::error::IpcError;

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

impl GenerationEvent {
    /// True for the event that ends a job (`finished` or `failed`); nothing follows it.
    pub fn is_terminal(&self) -> bool {
        matches!(self, GenerationEvent::Finished { .. } | GenerationEvent::Failed { .. })
    }
}

/// Where a generation's events go (a Tauri channel in the app, a vector in tests).
pub type EventEmitter = Box<dyn FnMut(GenerationEvent) + Send>;

/// Sends every event over `channel`; a send that fails (the window closed) is dropped.
pub fn channel_emitter(channel: Channel<GenerationEvent>) -> EventEmitter {
    Box::new(move |event| {
        let _ = channel.send(event);
    })
}
