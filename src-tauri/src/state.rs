//! `AppState`: what every command reaches through `tauri::State`.
//!
//! Owns: the engine worker handle, the history store and its startup notice, where the
//! demo model lives, the memory choice models open with, the setup wizard's host and the
//! local API, the remote backends.
//! Easy to break: a history that cannot be used must not stop the app: `open_for_app`
//! sets a damaged file aside or runs on a temporary store, and the notice says which.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use k3_app::settings::Settings;

use crate::ipc::error::IpcError;
use k3_app::history::HistoryNotice;
use k3_app::history::{open_for_app, HistoryError, HistoryStore};
use k3_app::memory::preview::ComputeRatesOnce;
use k3_app::memory::{MemoryChoice, MemoryFile, MemorySetting};
use k3_app::options::{startup_model, AppOptions};
use k3_app::performance::Threads;
use k3_app::worker::{ModelTarget, Worker};

pub struct AppState {
    pub worker: Arc<Worker>,
    pub store: Arc<Mutex<HistoryStore>>,
    /// What the history's startup check found, for the UI (`history_notice`).
    pub history_notice: Option<HistoryNotice>,
    pub demo: ModelTarget,
    /// The memory choice, context length and placement every model is opened with
    /// (Settings › Memory; `memory.json`).
    memory: Mutex<MemorySetting>,
    /// The app's data folder (settings files, history).
    pub data_dir: PathBuf,
    /// The CPU's kernel rates for forecasts, measured on first use.
    pub compute_rates: Arc<ComputeRatesOnce>,
    /// Set to stop a running "Verify now" (Settings › Model folder).
    pub verify_stop: Arc<std::sync::atomic::AtomicBool>,
    /// The setup wizard's saved state and running job.
    pub setup: Arc<k3_app::setup::SetupHost>,
    /// The local OpenAI-compatible API over the same runtime (Settings › Local API).
    pub local_api: Arc<k3_app::local_api::LocalApi>,
    /// The settings files, each read once (`k3_app::settings`).
    pub settings: Arc<Settings>,
    /// The overnight queue of prompts, over the same runtime (the Queue view).
    pub queue: Arc<crate::queue_host::QueueHost>,
    /// Remote backends conversations can be answered by (Settings › Backends).
    pub backends: Arc<k3_app::backends::Backends>,
    /// MCP tool servers, their connections and the conversations' running calls
    /// (Settings › Tools; the tool loop in the chat).
    pub tools: Arc<k3_app::tools::ToolsHost>,
    /// The thread counts the environment asks for (Settings › Performance shows them).
    pub env_threads: Threads,
    /// The log file the viewer reads: `<data>/logs/` with `K3APP_DATA_DIR`, else the
    /// platform's log folder, which `run()` sets (`None` on a platform without one).
    pub log_file: Option<PathBuf>,
}

/// Name of the history database inside the data folder.
pub const HISTORY_FILE: &str = "chats.sqlite";

impl AppState {
    /// Opens the history in `data_dir` and starts the worker, which loads the startup model.
    pub fn start(options: &AppOptions, data_dir: &Path, resource_dir: Option<&Path>) -> Result<AppState, HistoryError> {
        let history = open_for_app(&data_dir.join(HISTORY_FILE))?;
        let settings = Arc::new(Settings::open(data_dir));
        settings.watch(Box::new(|change| log::info!("settings saved: {}", change.file)));
        let (store, history_notice) = (Arc::new(Mutex::new(history.store)), history.notice);
        let setup =
            Arc::new(k3_app::setup::SetupHost::load(settings.clone(), options.repo.as_deref(), options.speed_seconds));
        let saved = MemoryFile::load(&settings);
        let options =
            &AppOptions { context_length: saved.context_length.or(options.context_length), ..options.clone() };
        let startup = startup_model(options, resource_dir, &setup.settings(), &saved);
        let memory = Mutex::new(MemorySetting {
            choice: saved.choice.unwrap_or(MemoryChoice::of_preset(options.preset)),
            context_length: options.context_length,
            residency: saved.residency_rule(),
        });
        let threads = Threads::load(&settings).or(options.threads);
        let worker = Worker::spawn(store.clone(), startup, threads)
            .map_err(|source| HistoryError::Folder { path: data_dir.into(), source })?;
        let demo = ModelTarget { context_length: options.context_length, ..k3_app::options::demo_model(resource_dir) };
        let local_api = Arc::new(k3_app::local_api::LocalApi::open(worker.runtime(), settings.clone()));
        let queue = Arc::new(crate::queue_host::QueueHost::open(data_dir, worker.runtime()));
        let backends = Arc::new(k3_app::backends::Backends::open(data_dir, settings.clone(), options.keyring));
        let tools = Arc::new(k3_app::tools::ToolsHost::open(data_dir, settings.clone(), options.keyring));
        Ok(AppState {
            worker: Arc::new(worker),
            store,
            history_notice,
            demo,
            memory,
            data_dir: data_dir.to_path_buf(),
            compute_rates: Arc::default(),
            verify_stop: Arc::default(),
            setup,
            local_api,
            queue,
            settings,
            backends,
            tools,
            env_threads: options.threads,
            log_file: crate::logging::log_file(Some(data_dir).filter(|_| options.data_dir.is_some()), None),
        })
    }

    /// The memory choice, context length and placement models open with.
    pub fn memory(&self) -> MemorySetting {
        *self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The memory choice models open with.
    pub fn memory_choice(&self) -> MemoryChoice {
        self.memory().choice
    }

    /// Positions of one conversation every model is opened with.
    pub fn context_length(&self) -> Option<usize> {
        self.memory().context_length
    }

    /// Makes `setting` the one models open with, saved for the next start.
    pub fn set_memory(&self, setting: MemorySetting) -> Result<(), IpcError> {
        MemoryFile::of(&setting).save(&self.settings)?;
        *self.memory.lock().unwrap_or_else(|p| p.into_inner()) = setting;
        Ok(())
    }

    pub fn history(&self) -> Result<MutexGuard<'_, HistoryStore>, IpcError> {
        self.store.lock().map_err(|_| IpcError::internal("history store lock poisoned"))
    }
}
