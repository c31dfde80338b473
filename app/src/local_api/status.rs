//! What Settings › Local API shows: [`ApiStatus`] (running or not, the address, the
//! counters, the recent requests) and [`ApiProblem`], why the server is not running when
//! the user wanted it to.

use super::settings::ApiSettings;

/// Why the local API did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiProblem {
    /// Another program listens on the port; `next_free` is offered, never switched to.
    PortTaken { port: u16, next_free: Option<u16> },
    /// Listening on the network needs a key.
    LanNeedsKey,
    /// The LAN address is not one the server may listen on.
    BadAddress { address: String, reason: String },
    /// Port 0 is not a port people can point a client at.
    BadPort,
    /// Binding or starting failed otherwise (the OS's words).
    Failed { message: String },
}

/// One answered request (the path only: a query string is never kept).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiLogLine {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub method: String,
    pub path: String,
    pub status: u16,
    /// Until the response head was ready (a stream goes on after it).
    pub seconds: f64,
    /// The client's address, e.g. `127.0.0.1:53122`.
    pub peer: Option<String>,
}

/// The local API now.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiStatus {
    pub settings: ApiSettings,
    pub running: bool,
    /// What to give a client, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: Option<String>,
    /// Generations from API clients running or waiting.
    pub generations_in_flight: u32,
    /// Requests answered since the server started.
    pub requests: u64,
    /// The most recent requests, newest last.
    pub log: Vec<ApiLogLine>,
    pub problem: Option<ApiProblem>,
}
