//! `k3-app`: the desktop app's product logic that needs no window, tested by a plain
//! `cargo test`. The Tauri crate (`src-tauri`) adapts it: its commands turn these services'
//! records into wire types and its events; nothing here knows of Tauri or the webview.
//!
//! Layout: `queue` (the overnight queue of prompts: journaled, resumed after a restart) ·
//! `settings` (one versioned record per settings file, read once, with change events) ·
//! `tools` (MCP servers the user adds, their tools offered to the model, calls run with
//! the user's permission).
//! Depends on: `k3-runtime` (replies run on the runtime the window's chats use) and
//! `k3-engine`'s chat and sampling types.

pub mod backends;
pub mod chat_defaults;
pub mod dashboard;
pub mod diagnostics;
pub mod error;
pub mod history;
pub mod local_api;
pub mod log_tail;
pub mod memory;
pub mod model_folder;
pub mod options;
pub mod performance;
pub mod queue;
pub mod reply_event;
pub mod saved_states;
pub mod settings;
pub mod setup;
pub mod slug;
pub mod tools;
pub mod worker;
