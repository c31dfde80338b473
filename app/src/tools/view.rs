//! Settings › Tools as the app's screens see it: a server (never its key, only whether one
//! is kept), what the user saves, a server's tools, the calls that wait and the user's
//! decision; and the conversions to and from the saved record (`record.rs`).

use super::record::{EnvVarRecord, ServerTransportRecord, ToolServerRecord};
use crate::settings::records::KeyPlaceRecord;

/// One environment variable of a stdio server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolTransport {
    /// A program the app starts (its whole environment is `env`).
    Stdio { command: String, args: Vec<String>, env: Vec<EnvVar>, working_dir: Option<String> },
    /// A Streamable HTTP endpoint (`http://` on this machine only, else `https://`).
    Http {
        url: String,
        /// True when a key is kept for it (the key itself never crosses to the window).
        has_key: bool,
    },
}

/// A tool server as Settings › Tools shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct ServerToolInfo {
    pub name: String,
    pub description: Option<String>,
    /// The JSON schema of its arguments, as text.
    pub schema: String,
}

/// A call of the conversation's last reply that no result answers yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingToolCall {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

impl From<&ToolServerRecord> for ToolServer {
    fn from(r: &ToolServerRecord) -> Self {
        let transport = match &r.transport {
            ServerTransportRecord::Stdio { command, args, env, working_dir } => ToolTransport::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: env.iter().map(|v| EnvVar { name: v.name.clone(), value: v.value.clone() }).collect(),
                working_dir: working_dir.clone(),
            },
            ServerTransportRecord::Http { url, key } => {
                ToolTransport::Http { url: url.clone(), has_key: key.is_some() }
            }
        };
        ToolServer {
            id: r.id.clone(),
            name: r.name.clone(),
            transport,
            enabled: r.enabled,
            always_allowed: r.always_allowed.clone(),
            timeout_seconds: r.timeout_seconds,
        }
    }
}

/// The saved transport of `wire`; an HTTP server's key is kept at `key`.
pub fn transport_record(wire: &ToolTransport, key: Option<KeyPlaceRecord>) -> ServerTransportRecord {
    match wire {
        ToolTransport::Stdio { command, args, env, working_dir } => ServerTransportRecord::Stdio {
            command: command.trim().to_string(),
            args: args.clone(),
            env: env.iter().map(|v| EnvVarRecord { name: v.name.trim().to_string(), value: v.value.clone() }).collect(),
            working_dir: working_dir.clone().filter(|d| !d.trim().is_empty()),
        },
        ToolTransport::Http { url, .. } => ServerTransportRecord::Http { url: url.trim().to_string(), key },
    }
}
