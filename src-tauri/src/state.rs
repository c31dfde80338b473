//! `AppState`: what every command reaches through `tauri::State`.
//!
//! Owns: the engine worker handle, the history store and its startup notice, where the
//! demo model lives, the setup wizard's host and the local API.
//! Easy to break: a history that cannot be used must not stop the app: `open_for_app`
//! sets a damaged file aside or runs on a temporary store, and the notice says which.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::history::{open_for_app, HistoryError, HistoryStore};
use crate::ipc::dto::HistoryNotice;
use crate::ipc::error::IpcError;
use crate::options::{startup_model, AppOptions};
use crate::worker::{ModelTarget, Worker};

pub struct AppState {
    pub worker: Arc<Worker>,
    pub store: Arc<Mutex<HistoryStore>>,
    /// What the history's startup check found, for the UI (`history_notice`).
    pub history_notice: Option<HistoryNotice>,
    pub demo: ModelTarget,
    /// Positions of one conversation every model is opened with.
    pub context_length: usize,
    /// The memory preset every model is opened with.
    pub preset: k3_plan::Preset,
    /// The setup wizard's saved state and running job.
    pub setup: Arc<crate::setup::SetupHost>,
    /// The local OpenAI-compatible API over the same runtime (Settings › Local API).
    pub local_api: Arc<crate::local_api::LocalApi>,
}

/// Name of the history database inside the data folder.
pub const HISTORY_FILE: &str = "chats.sqlite";

impl AppState {
    /// Opens the history in `data_dir` and starts the worker, which loads the startup model.
    pub fn start(options: &AppOptions, data_dir: &Path, resource_dir: Option<&Path>) -> Result<AppState, HistoryError> {
        let history = open_for_app(&data_dir.join(HISTORY_FILE))?;
        let (store, history_notice) = (Arc::new(Mutex::new(history.store)), history.notice);
        let setup = Arc::new(crate::setup::SetupHost::load(data_dir, options.repo.as_deref(), options.speed_seconds));
        let startup = startup_model(options, resource_dir, &setup.settings());
        let worker = Worker::spawn(store.clone(), startup)
            .map_err(|source| HistoryError::Folder { path: data_dir.into(), source })?;
        let demo = ModelTarget {
            context_length: options.context_length,
            preset: options.preset,
            ..crate::options::demo_model(resource_dir)
        };
        let (context_length, preset) = (options.context_length, options.preset);
        let local_api = Arc::new(crate::local_api::LocalApi::open(worker.runtime(), data_dir));
        Ok(AppState { worker: Arc::new(worker), store, history_notice, demo, context_length, preset, setup, local_api })
    }

    pub fn history(&self) -> Result<MutexGuard<'_, HistoryStore>, IpcError> {
        self.store.lock().map_err(|_| IpcError::internal("history store lock poisoned"))
    }
}
