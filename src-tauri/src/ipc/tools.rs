//! Wire types of tools in the window: Settings › Tools' servers and their tools, and the
//! calls of a conversation waiting for the user.
//!
//! Must not: be saved: `k3_app::tools::ToolServersRecord` is the file's form; these
//! convert to and from it in `crate::tools`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One environment variable of a stdio server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ToolTransport {
    /// A program the app starts (its whole environment is `env`).
    #[serde(rename_all = "camelCase")]
    Stdio { command: String, args: Vec<String>, env: Vec<EnvVar>, working_dir: Option<String> },
    /// A Streamable HTTP endpoint (`http://` on this machine only, else `https://`).
    #[serde(rename_all = "camelCase")]
    Http {
        url: String,
        /// True when a key is kept for it (the key itself never crosses to the window).
        has_key: bool,
    },
}

/// A tool server as Settings › Tools shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToolServer {
    pub id: String,
    pub name: String,
    pub transport: ToolTransport,
    /// Offered to new conversations.
    pub enabled: bool,
    /// Tools that run without asking (each revocable).
    pub always_allowed: Vec<String>,
    pub timeout_seconds: u32,
}

/// A server to add or change. `id` empty adds one; `key` (HTTP only) replaces the kept
/// key when given, and `clear_key` removes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToolServerInput {
    pub id: String,
    pub name: String,
    pub transport: ToolTransport,
    pub enabled: bool,
    pub timeout_seconds: u32,
    pub key: Option<String>,
    pub clear_key: bool,
}

/// One tool of a server, as its server declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ServerToolInfo {
    pub name: String,
    pub description: Option<String>,
    /// The JSON schema of its arguments, as text.
    pub schema: String,
}

/// A call of the conversation's last reply that no result answers yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolCall {
    #[ts(type = "number")]
    pub message_id: i64,
    pub call_id: String,
    /// The name the model called.
    pub tool: String,
    pub arguments: String,
    /// The server that would run it; `None` when no enabled server offers the tool (it
    /// can only be denied).
    pub server_id: Option<String>,
    pub server_name: Option<String>,
    /// It runs without asking (Settings › Tools).
    pub always_allowed: bool,
}

/// What the user decided about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ToolDecision {
    /// Run it this once.
    Allow,
    /// Run it, and every later call of this tool on this server.
    AlwaysAllow,
    /// Do not run it: the model is told the user denied it.
    Deny,
    /// Run it because Settings › Tools always allows it (refused otherwise).
    Auto,
}
