//! Tools in the chat window: the MCP servers a user adds, their tools offered to the
//! model, and each call run only with the user's permission.
//!
//! Layout: `record` (Settings › Tools as saved: servers, their environment, the tools
//! always allowed) · `client` (one live connection over `rmcp`: a stdio program or a
//! Streamable HTTP endpoint) · `hub` (connections by server, the names the model sees,
//! calls with a timeout and a stop) · `outcome` (a call's result as the text the model
//! reads, capped) · `pending` (which calls of a conversation wait for the user) · `error` ·
//! `view` (Settings › Tools and the waiting calls as the screens see them) · `host`
//! (`ToolsHost`: saving servers and keys, the user's decision on a call → a tool message).
//! Owns: everything between a saved server and the text of a tool message; the window's
//! commands and the history adapt it.
//! Must not: run a call the user has not allowed ([`hub::Permission`] is the only way to
//! ask for one); give a server's program more environment than its record lists; turn a
//! result into anything but text.

pub mod client;
pub mod error;
pub mod host;
pub mod hub;
pub mod outcome;
pub mod pending;
pub mod record;
pub mod view;

pub use error::ToolError;
pub use host::{offered_to_new_chats, ToolsHost};
pub use hub::{tool_key, OfferedTool, Permission, ToolHub, ToolOffer};
pub use outcome::{CallOutcome, MAX_RESULT_BYTES};
pub use pending::{pending_calls, PendingCall};
pub use record::{EnvVarRecord, ServerTransportRecord, ToolServerRecord, ToolServersRecord};
