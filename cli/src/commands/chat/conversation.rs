//! The conversation as the REPL keeps it, and its model's plan in one line. A leaf the
//! loop and its `/` commands, replies and resume all use.
//!
//! Owns: `Conversation`, `describe_plan`.

use k3_engine::chat::{ChatMessage, ChatMode};
use k3_engine::GenerateParams;
use k3_plan::format_bytes;
use k3_runtime::ModelSummary;

/// The conversation as the REPL keeps it.
pub(super) struct Conversation {
    pub(super) system: Option<String>,
    pub(super) messages: Vec<ChatMessage>,
    pub(super) mode: ChatMode,
    pub(super) params: GenerateParams,
    /// `--resume FILE`: where the conversation and its engine state are kept.
    pub(super) state_file: Option<std::path::PathBuf>,
}

/// The plan in one line, with the context it reserves.
pub(super) fn describe_plan(summary: &ModelSummary) -> String {
    let weights = match &summary.plan {
        Some(p) => format!(
            "{}/{} layers pinned, ring {}, {} expert slots, {} in all",
            p.pinned_layers,
            summary.layers,
            p.ring_slots,
            p.cache_slots,
            format_bytes(p.total_bytes)
        ),
        None => "every weight resident".to_string(),
    };
    format!("{weights}; context {} positions", summary.context_length)
}
