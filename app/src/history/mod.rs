//! Chat history in SQLite: conversations and their messages, in the app's data folder.
//!
//! Owns: the database file (`chats.sqlite`, WAL), its schema migrations, reads and writes
//! of conversations and messages, exports to Markdown and JSON, and the startup check
//! (`open_for_app`): a damaged file is set aside unchanged and a new one started, a newer
//! app's file is left alone.
//! Must not: know about Tauri or the engine (callers map rows to engine messages), or
//! store its own types as they are: the JSON columns are `records`' frozen row types.
//! Easy to break: a message is written in one transaction when it completes, so a crash
//! mid-reply loses only the reply in progress; never hold a transaction open across a
//! generation.

mod error;
mod export;
mod header;
mod quarantine;
mod records;
mod schema;
mod startup;
mod store;
mod types;

pub use error::HistoryError;
pub use export::{export_conversation, export_file_name};
pub use records::{SETTINGS_KEYS, STATS_KEYS};
pub use schema::{MIGRATIONS, SCHEMA_VERSION};
pub use startup::{open_for_app, StartupHistory};
pub use store::{HistoryStore, NewAssistantMessage, DEFAULT_TITLE};
pub use types::{
    Conversation, ConversationSummary, ExportFile, ExportFormat, FinishReason, HistoryNotice, HistoryNoticeKind,
    Message, MessageStats, MessageStatus, Role, SamplingSettings, ThinkingEffort, ToolAnswer, ToolCall, ToolUse,
};
