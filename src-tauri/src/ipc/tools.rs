//! Wire types of tools in the window: Settings › Tools' servers and their tools, and the
//! calls of a conversation waiting for the user (twins of `k3_app::tools::view`'s).
//!
//! Must not: be saved: `k3_app::tools::ToolServersRecord` is the file's form.

use crate::ipc::twin::{wire_enum, wire_struct, wire_tagged};

wire_struct! {
    /// One environment variable of a stdio server.
    pub struct EnvVar both ways k3_app::tools::view::EnvVar {
        name: String,
        value: String,
    }
}

wire_tagged! {
    /// How a server is reached.
    #[serde(tag = "kind", rename_all = "camelCase")]
    pub enum ToolTransport both ways k3_app::tools::view::ToolTransport {
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
}

wire_struct! {
    /// A tool server as Settings › Tools shows it.
    pub struct ToolServer from k3_app::tools::view::ToolServer {
        id: String,
        name: String,
        transport: ToolTransport,
        /// Offered to new conversations.
        enabled: bool,
        /// Tools that run without asking (each revocable).
        always_allowed: Vec<String>,
        timeout_seconds: u32,
    }
}

wire_struct! {
    /// A server to add or change. `id` empty adds one; `key` (HTTP only) replaces the kept
    /// key when given, and `clear_key` removes it.
    pub struct ToolServerInput both ways k3_app::tools::view::ToolServerInput {
        id: String,
        name: String,
        transport: ToolTransport,
        enabled: bool,
        timeout_seconds: u32,
        key: Option<String>,
        clear_key: bool,
    }
}

wire_struct! {
    /// One tool of a server, as its server declares it.
    pub struct ServerToolInfo from k3_app::tools::view::ServerToolInfo {
        name: String,
        description: Option<String>,
        /// The JSON schema of its arguments, as text.
        schema: String,
    }
}

wire_struct! {
    /// A call of the conversation's last reply that no result answers yet.
    pub struct PendingToolCall from k3_app::tools::view::PendingToolCall {
        #[ts(type = "number")]
        message_id: i64,
        call_id: String,
        /// The name the model called.
        tool: String,
        arguments: String,
        /// The server that would run it; `None` when no enabled server offers the tool (it
        /// can only be denied).
        server_id: Option<String>,
        server_name: Option<String>,
        /// It runs without asking (Settings › Tools).
        always_allowed: bool,
    }
}

wire_enum! {
    /// What the user decided about a call.
    #[serde(rename_all = "camelCase")]
    pub enum ToolDecision from k3_app::tools::view::ToolDecision {
        /// Run it this once.
        Allow,
        /// Run it, and every later call of this tool on this server.
        AlwaysAllow,
        /// Do not run it: the model is told the user denied it.
        Deny,
        /// Run it because Settings › Tools always allows it (refused otherwise).
        Auto,
    }
}
