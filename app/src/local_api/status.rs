//! What Settings › Local API shows: [`ApiStatus`] (running or not, the address, the
//! counters, the recent requests, and the `ApiProblem` when the server is not running
//! though the user wanted it to).

pub use super::problem::ApiProblem;
use super::settings::ApiSettings;

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
