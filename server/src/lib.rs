//! k3-server: the local OpenAI-compatible API (`k3 serve`, and the app's "Local API"
//! setting) as an adapter over the one engine `k3_runtime::Runtime` hosts — an API
//! request and a chat window queue on the same engine, FIFO.
//!
//! Bird's-eye view: [`Server::start`] checks the address (`bind`: loopback, or a LAN
//! address with a key; never 0.0.0.0), binds, and runs the accept loop (`accept`) on its
//! own tokio threads. Every request passes the request log, then the guard (`security`:
//! Host, Origin, key), then a route (`routes`). A generation (`generation`) takes an
//! admission slot (`queue`), queues an [`reply::ApiReply`] on the runtime — the
//! `ReplyHandler` that streams text from the engine thread over a channel — and answers
//! whole or as SSE; dropping the answer (client gone) cancels the engine job.
//!
//! Invariants: this crate depends on k3-runtime, never the reverse; it opens no model
//! folder, computes no figure and decides no engine-state reuse (the runtime does). Every
//! error answer has OpenAI's shape (`api_error`). No `unsafe`, no panics on input.
#![forbid(unsafe_code)]

mod accept;
pub mod agent;
mod answer;
pub mod anthropic;
pub mod api_error;
pub mod batches;
mod bind;
mod body;
pub mod config;
pub mod error;
mod generation;
pub mod head;
mod prepare;
pub mod queue;
pub mod registry;
pub mod reply;
pub mod request;
pub mod response;
mod routes;
pub mod security;
pub mod split;
mod state;
pub mod stats;
pub mod turn;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use k3_runtime::Runtime;
use tokio::sync::watch;

pub use api_error::ApiError;
pub use bind::{next_free_port, Exposure};
pub use config::{BatchDir, RequestLog, RequestLogFn, ServerConfig, DEFAULT_PORT};
pub use error::ServerError;
pub use stats::StatsSnapshot;

use crate::accept::ConnLimits;
use crate::queue::Admission;
use crate::registry::Registry;
use crate::security::Guard;
use crate::state::{AppState, Limits};
use crate::stats::ServerStats;

/// The server (see [`Server::start`]).
pub struct Server;

/// A running server; stopping it (or dropping the handle) closes every connection.
pub struct ServerHandle {
    local_addr: SocketAddr,
    exposure: Exposure,
    stats: Arc<ServerStats>,
    admission: Arc<Admission>,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    /// Why the Batch API is off though a folder was offered for it.
    batch_problem: Option<String>,
}

/// What the handle reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub local_addr: SocketAddr,
    pub exposure: Exposure,
    /// Generations of this server running or waiting.
    pub generations_in_flight: usize,
    pub stats: StatsSnapshot,
}

impl Server {
    /// Checks the address, binds it and serves on background threads. A taken port is an
    /// error naming the next free one; nothing else is tried.
    pub fn start(runtime: Arc<Runtime>, config: ServerConfig) -> Result<ServerHandle, ServerError> {
        let exposure = bind::exposure(config.host, config.api_key.is_some())?;
        if let Some(origin) = config.allowed_origins.iter().find(|o| o.is_empty() || o.as_str() == "null") {
            return Err(ServerError::BadOrigin { origin: origin.clone() });
        }
        let listener = bind::bind(config.host, config.port)?;
        let local_addr = listener.local_addr().map_err(ServerError::Threads)?;
        // The address listened on names this server too (probe finding: `--host 127.0.0.2`
        // started a server that refused every request's Host).
        let guard =
            Arc::new(Guard::new(local_addr.port(), Some(config.host), config.allowed_origins.clone(), config.api_key));
        let stats = Arc::new(ServerStats::default());
        let admission = Admission::new(runtime.batch(), config.queue_capacity);
        let mut batch_problem = None;
        let batches = match &config.batch_dir {
            Some(dir) => match crate::batches::BatchApi::open(&dir.path) {
                Ok(api) => Some(api),
                Err(e) if dir.required => {
                    return Err(ServerError::BatchDir { path: dir.path.clone(), message: e.to_string() });
                }
                Err(e) => {
                    batch_problem = Some(format!("the batch folder {}: {e}", dir.path.display()));
                    None
                }
            },
            None => None,
        };
        let state = AppState {
            registry: Registry::new(runtime.probe()),
            runtime,
            admission: admission.clone(),
            stats: stats.clone(),
            limits: Arc::new(Limits {
                max_body_bytes: config.max_body_bytes,
                body_read_timeout: config.body_read_timeout,
                keepalive_interval: config.keepalive_interval,
                retry_after_seconds: config.retry_after_seconds,
                default_max_tokens: config.default_max_tokens,
                require_tool_call: config.require_tool_call,
            }),
            batches,
        };
        let resume = state.clone();
        let app = routes::router(state, guard, config.request_log);
        let limits =
            ConnLimits { header_read_timeout: config.header_read_timeout, max_connections: config.max_connections };
        let (shutdown, stop) = watch::channel(false);
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("k3-server")
            .enable_all()
            .build()
            .map_err(ServerError::Threads)?;
        let thread = std::thread::Builder::new()
            .name("k3-server-accept".into())
            .spawn(move || {
                tokio.block_on(async move {
                    // Batches a crash or a restart left unfinished go on.
                    if let Some(api) = &resume.batches {
                        api.resume_all(&resume);
                    }
                    // Fails only outside a tokio reactor, which this is not.
                    if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
                        accept::serve(listener, app, limits, stop).await;
                    }
                })
            })
            .map_err(ServerError::Threads)?;
        Ok(ServerHandle { local_addr, exposure, stats, admission, shutdown, thread: Some(thread), batch_problem })
    }
}

impl ServerHandle {
    /// Why the Batch API is off though a folder was offered for it (`BatchDir::required`
    /// false), for the front end to say.
    pub fn batch_problem(&self) -> Option<&str> {
        self.batch_problem.as_deref()
    }

    /// The address bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn status(&self) -> ServerStatus {
        ServerStatus {
            local_addr: self.local_addr,
            exposure: self.exposure,
            generations_in_flight: self.admission.in_flight(),
            stats: self.stats.snapshot(),
        }
    }

    /// Stops accepting, closes every connection (their generations are cancelled) and
    /// waits for the server threads.
    pub fn stop(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}
