//! [`AppState`]: what every route shares — the runtime, the registry, admission, stats
//! and the limits of the configuration.
//!
//! Must not: hold a lock across an await (everything here is an `Arc` or atomics).

use std::sync::Arc;
use std::time::Duration;

use k3_runtime::Runtime;

use crate::batches::api::BatchApi;
use crate::queue::Admission;
use crate::registry::Registry;
use crate::stats::ServerStats;

/// The limits the routes apply.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_body_bytes: usize,
    /// `ServerConfig::body_read_timeout`.
    pub body_read_timeout: Duration,
    pub keepalive_interval: Duration,
    pub retry_after_seconds: u64,
    pub default_max_tokens: usize,
    /// `ServerConfig::require_tool_call`.
    pub require_tool_call: bool,
}

/// Shared by every route.
#[derive(Clone)]
pub struct AppState {
    pub runtime: Arc<Runtime>,
    pub registry: Registry,
    pub admission: Arc<Admission>,
    pub stats: Arc<ServerStats>,
    pub limits: Arc<Limits>,
    /// The Batch API's folder, when the server keeps one (`ServerConfig::batch_dir`).
    pub batches: Option<Arc<BatchApi>>,
}
