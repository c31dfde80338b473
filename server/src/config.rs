//! [`ServerConfig`]: everything a front end (the CLI, the app's Settings) decides about the
//! local API, with the defaults PRODUCT.md §4.1 names.
//!
//! Owns: the listen address and key, the Origin allowlist, and every limit (body size,
//! header read timeout, connections, queue, keepalive interval), plus the request-log
//! callback the front end prints or stores.
//! Must not: validate the address (that is `bind`, which knows the loopback rule).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// One answered request, as the request-log callback hears it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLog {
    pub method: String,
    /// The path only: a query string is never logged.
    pub path: String,
    pub status: u16,
    /// Until the response head was ready (a stream goes on after it).
    pub duration: Duration,
    pub peer: Option<SocketAddr>,
}

/// Called once per request, from a server thread; must return quickly.
pub type RequestLogFn = Arc<dyn Fn(&RequestLog) + Send + Sync>;

/// How the server listens and what it accepts.
#[derive(Clone)]
pub struct ServerConfig {
    /// A loopback address, or a LAN address together with `api_key`; never unspecified.
    pub host: IpAddr,
    /// 0 lets the system choose (tests); the bound port is in the handle.
    pub port: u16,
    /// Bearer key; without one any `Authorization` is accepted (Kimi Code sends a dummy).
    pub api_key: Option<String>,
    /// Exact `Origin` values accepted (default none; `null` is never accepted).
    pub allowed_origins: Vec<String>,
    /// Largest request body; more is refused with 413 before it is read.
    pub max_body_bytes: usize,
    /// A client that has not sent a whole request head within this is disconnected.
    pub header_read_timeout: Duration,
    /// A request body not whole within this after its head is refused with 408.
    pub body_read_timeout: Duration,
    /// Open connections at once; more are closed on accept.
    pub max_connections: usize,
    /// Generations waiting behind the running one; more get 429.
    pub queue_capacity: usize,
    /// The `Retry-After` seconds of a 429.
    pub retry_after_seconds: u64,
    /// `: keepalive` comments on an SSE stream that has sent nothing for this long.
    pub keepalive_interval: Duration,
    /// Reply length when a chat request names none (capped by the context length).
    pub default_max_tokens: usize,
    /// A turn that declares tools and leaves the choice to the model (`auto`) must call
    /// one, and one that answers a tool result answers in text: for a model that does not
    /// call tools on its own (the demo model), so an agent's loop can be tried end to end.
    pub require_tool_call: bool,
    pub request_log: Option<RequestLogFn>,
    /// Where the Batch API keeps its files and batches (`None`: no Batch API, 404).
    pub batch_dir: Option<BatchDir>,
}

/// The Batch API's folder, and whether the server may start without it.
#[derive(Debug, Clone)]
pub struct BatchDir {
    pub path: std::path::PathBuf,
    /// Named by the user: a folder that cannot be opened (or that another server keeps)
    /// stops the start; otherwise the server runs without the Batch API, saying why.
    pub required: bool,
}

/// The default port (kimi-k3-in-c's bridge and its Kimi Code config use it).
pub const DEFAULT_PORT: u16 = 8000;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            api_key: None,
            allowed_origins: Vec::new(),
            max_body_bytes: 4 << 20,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 64,
            queue_capacity: 8,
            retry_after_seconds: 5,
            keepalive_interval: Duration::from_secs(15),
            default_max_tokens: 1024,
            require_tool_call: false,
            request_log: None,
            batch_dir: None,
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("queue_capacity", &self.queue_capacity)
            .field("batch_dir", &self.batch_dir)
            .field("keepalive_interval", &self.keepalive_interval)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish_non_exhaustive()
    }
}
