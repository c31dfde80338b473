//! What can go wrong between the app and a tool server, each case naming the server,
//! program, URL or tool, in words a user can act on.

/// A tool server or call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The server's program could not be found or started.
    #[error("could not start `{command}` for tool server {server}: {reason}")]
    Spawn { server: String, command: String, reason: String },
    /// An HTTP server's address is not one the app will send tool calls to.
    #[error("tool server {server}: {reason} ({url})")]
    Address { server: String, url: String, reason: String },
    /// The server did not complete MCP's handshake.
    #[error("tool server {server} did not start its MCP session: {reason}")]
    Handshake { server: String, reason: String },
    /// The server's process ended or its connection closed.
    #[error("tool server {server} stopped{report}")]
    Stopped { server: String, report: String },
    /// The server answered a request with an error or something MCP does not allow.
    #[error("tool server {server}: {reason}")]
    Protocol { server: String, reason: String },
    /// A call took longer than the server's timeout.
    #[error("{tool} on {server} did not answer within {seconds} s")]
    Timeout { server: String, tool: String, seconds: u64 },
    /// The user stopped the call.
    #[error("{tool} on {server} was stopped by the user")]
    Cancelled { server: String, tool: String },
    /// No enabled server offers a tool of this name.
    #[error("no enabled tool server offers a tool named {tool}")]
    UnknownTool { tool: String },
    /// The model's arguments are not a JSON object.
    #[error("the arguments of {tool} are not a JSON object: {reason}")]
    BadArguments { tool: String, reason: String },
    /// The call was not allowed by the user.
    #[error("{tool} on {server} needs the user's permission")]
    NotAllowed { server: String, tool: String },
    /// No server has this id.
    #[error("no tool server has the id {id}")]
    UnknownServer { id: String },
}
