//! The app's local OpenAI-compatible API (Settings › Local API): a `k3_server` over the
//! same `k3_runtime::Runtime` the window uses, so an API request and a chat in the window
//! queue on one engine, FIFO.
//!
//! Layout: `settings` (what the user chose, saved to `local-api.json`; off by default) ·
//! `status` (what Settings shows) · `log` (the recent requests).
//! Owns: [`LocalApi`] — starting and stopping the server, saving the choice, and starting
//! it again when the app opens if it was on. A taken port is reported with the next free
//! one; the app never switches ports on its own (PRODUCT.md §4.1).

pub mod log;
pub mod problem;
pub mod settings;
pub mod status;

use std::sync::{Arc, Mutex, MutexGuard};

use k3_runtime::Runtime;
use k3_server::{Server, ServerError, ServerHandle};

pub use settings::{ApiSettings, API_SETTINGS_FILE};

use crate::settings::records::LocalApiRecord;
use crate::settings::Settings;
pub use problem::ApiProblem;
pub use status::{ApiLogLine, ApiStatus};

use crate::error::AppError;
use log::RequestBook;

/// The server, if one runs, and the settings behind it.
pub struct LocalApi {
    runtime: Arc<Runtime>,
    /// Where the choice is saved (`local-api.json`).
    store: Arc<Settings>,
    book: Arc<RequestBook>,
    inner: Mutex<Inner>,
}

struct Inner {
    settings: ApiSettings,
    server: Option<ServerHandle>,
    problem: Option<ApiProblem>,
}

impl LocalApi {
    /// Reads the saved settings and, when the API was on, starts it (a failure to start
    /// is kept as the status's problem, for Settings to show).
    pub fn open(runtime: Arc<Runtime>, store: Arc<Settings>) -> LocalApi {
        let settings = ApiSettings::from(store.get::<LocalApiRecord>());
        let api = LocalApi {
            runtime,
            store,
            book: Arc::new(RequestBook::default()),
            inner: Mutex::new(Inner { settings: settings.clone(), server: None, problem: None }),
        };
        if settings.enabled {
            let outcome = api.launch(&settings);
            record(&mut api.lock(), outcome);
        }
        api
    }

    /// Starts the server with `settings` (stopping a running one first) and saves them:
    /// `enabled` when it started, off with the reason when it did not.
    pub fn start(&self, mut settings: ApiSettings) -> Result<ApiStatus, AppError> {
        let mut inner = self.lock();
        if let Some(old) = inner.server.take() {
            old.stop();
        }
        let outcome = self.launch(&settings);
        settings.enabled = outcome.is_ok();
        inner.settings = settings;
        record(&mut inner, outcome);
        self.store.set(LocalApiRecord::from(&inner.settings))?;
        Ok(self.status_of(&inner))
    }

    /// Stops the server (its running generations are cancelled) and saves it as off.
    pub fn stop(&self) -> Result<ApiStatus, AppError> {
        let mut inner = self.lock();
        if let Some(server) = inner.server.take() {
            server.stop();
            ::log::info!("local API stopped");
        }
        inner.problem = None;
        inner.settings.enabled = false;
        self.store.set(LocalApiRecord::from(&inner.settings))?;
        Ok(self.status_of(&inner))
    }

    /// The app quits: stops the server (cancelling its generations) and keeps the saved
    /// choice, so the API is on again at the next start if it was on.
    pub fn shutdown(&self) {
        if let Some(server) = self.lock().server.take() {
            server.stop();
        }
    }

    pub fn status(&self) -> ApiStatus {
        self.status_of(&self.lock())
    }

    fn launch(&self, settings: &ApiSettings) -> Result<ServerHandle, ApiProblem> {
        let config = settings.server_config(self.book.callback())?;
        Server::start(self.runtime.clone(), config).map_err(|e| problem_of(&e))
    }

    fn status_of(&self, inner: &Inner) -> ApiStatus {
        let running = inner.server.as_ref().map(|s| s.status());
        ApiStatus {
            settings: inner.settings.clone(),
            running: running.is_some(),
            base_url: running.as_ref().map(|s| format!("http://{}/v1", s.local_addr)),
            generations_in_flight: running.as_ref().map_or(0, |s| s.generations_in_flight as u32),
            requests: running.as_ref().map_or(0, |s| s.stats.requests),
            log: self.book.lines(),
            problem: inner.problem.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn record(inner: &mut Inner, outcome: Result<ServerHandle, ApiProblem>) {
    match outcome {
        Ok(server) => {
            ::log::info!("local API listening on {}", server.local_addr());
            inner.server = Some(server);
            inner.problem = None;
        }
        Err(problem) => {
            ::log::warn!("local API not started: {problem:?}");
            inner.problem = Some(problem);
        }
    }
}

fn problem_of(e: &ServerError) -> ApiProblem {
    match e {
        ServerError::PortTaken { addr, next_free } => {
            ApiProblem::PortTaken { port: addr.port(), next_free: *next_free }
        }
        ServerError::LanNeedsKey { .. } => ApiProblem::LanNeedsKey,
        ServerError::Unspecified { host } => ApiProblem::BadAddress {
            address: host.to_string(),
            reason: "it listens on every interface; give this machine's own address".into(),
        },
        ServerError::BadOrigin { .. }
        | ServerError::Bind { .. }
        | ServerError::Threads(_)
        | ServerError::BatchDir { .. } => ApiProblem::Failed { message: e.to_string() },
    }
}
