//! The app's side of the runtime: the one engine worker, as the window's commands use it.
//!
//! Owns: starting `k3_runtime::Runtime` with the startup model, queueing replies as
//! [`HistoryReply`] jobs (history store + event channel) — on the local engine, or on the
//! remote backend a conversation is set to — cancel, and reporting the model in use.
//! Everything about running jobs — the FIFO queue, cancel tokens registered
//! before queueing and removed before a job's end, model opens between generations,
//! engine-state reuse — is the runtime's (`runtime/src/worker.rs`), shared with `k3 chat`
//! and the local API server.
//! Must not: run engine work on the main (UI) thread.

mod model;
mod reply;
mod status;

use std::sync::{Arc, Mutex};

pub use model::{model_info, ModelTarget};
pub use reply::{HistoryReply, JobKind};
pub use status::{ModelInfo, ModelStatus};

use k3_engine::DecodeMode;
use k3_runtime::{MetricsProbe, Runtime};

use crate::backends::Backends;
use crate::error::AppError;
use crate::history::HistoryStore;
use crate::performance::Threads;
use crate::reply_event::ReplyEmitter;

/// The handle commands use; cheap to share.
pub struct Worker {
    runtime: Arc<Runtime>,
    store: Arc<Mutex<HistoryStore>>,
    /// The thread counts every model opens with, and the last target asked for (what
    /// [`Worker::reopen`] opens again).
    opens: Mutex<(Threads, ModelTarget)>,
}

impl Worker {
    /// Starts the runtime and queues the opening of `startup` with `threads`.
    pub fn spawn(store: Arc<Mutex<HistoryStore>>, startup: ModelTarget, threads: Threads) -> std::io::Result<Worker> {
        let runtime = Arc::new(Runtime::start()?);
        runtime.queue_open(startup.request(threads));
        Ok(Worker { runtime, store, opens: Mutex::new((threads, startup)) })
    }

    /// The thread counts models open with.
    pub fn threads(&self) -> Threads {
        self.opens.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// Makes `threads` the counts models open with and opens the last target again with
    /// them, changed by `update` (after the jobs already queued, like any open).
    pub fn reopen(
        &self,
        threads: Threads,
        update: impl FnOnce(ModelTarget) -> ModelTarget,
    ) -> Result<ModelInfo, AppError> {
        let target = {
            let mut opens = self.opens.lock().unwrap_or_else(|p| p.into_inner());
            opens.0 = threads;
            update(opens.1.clone())
        };
        self.open_model(target)
    }

    /// The one runtime, for the local API server to queue on.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.clone()
    }

    /// The runtime's live view (readable while a reply runs).
    pub fn probe(&self) -> MetricsProbe {
        self.runtime.probe()
    }

    /// Opens `target` after the jobs already queued; blocks until it is loaded or refused.
    pub fn open_model(&self, target: ModelTarget) -> Result<ModelInfo, AppError> {
        let threads = self.threads();
        match self.runtime.open_model(target.request(threads)) {
            Ok(summary) => {
                self.opens.lock().unwrap_or_else(|p| p.into_inner()).1 = target;
                Ok(model_info(&summary))
            }
            Err(e) => Err(opening_error(&e, &target)),
        }
    }

    /// The model in use once the queued model opens (the startup load among them) are
    /// done; never waits behind a running reply.
    pub fn status(&self) -> ModelStatus {
        let probe = self.runtime.probe();
        probe.wait_settled();
        let now = probe.snapshot();
        let error = now.model_error.map(|f| {
            AppError::from(f.error.as_ref()).with_details(format!("Opening the model folder {}", f.path.display()))
        });
        ModelStatus { model: now.model.as_ref().map(model_info), error }
    }

    /// Queues a generation; returns its job id at once. Events go to `emit`, starting
    /// with `queued`. A conversation set to a remote backend is answered by it (and only
    /// then does anything leave this machine); the others by the local engine as `local`
    /// says (Settings › Performance: speculative or not, where the state is saved).
    pub fn generate(
        &self,
        conversation_id: i64,
        kind: JobKind,
        emit: ReplyEmitter,
        (backends, local): (&Backends, LocalReply),
    ) -> Result<u64, AppError> {
        let backend = self
            .store
            .lock()
            .map_err(|_| AppError::internal("history store lock poisoned"))?
            .backend(conversation_id)?;
        match backend {
            None => {
                let model_name = self.runtime.probe().snapshot().model.map(|m| m.name).unwrap_or_default();
                let reply = HistoryReply::new(conversation_id, kind, self.store.clone(), emit, model_name).local(local);
                Ok(self.runtime.reply(Box::new(reply)))
            }
            Some(id) => {
                let chat = backends.chat(&id)?;
                let reply =
                    HistoryReply::new(conversation_id, kind, self.store.clone(), emit, chat.model().to_string());
                Ok(self.runtime.reply_remote(chat, Box::new(reply)))
            }
        }
    }

    /// Requests a stop of job `id` (queued or running); false when no such job is live.
    pub fn cancel(&self, id: u64) -> bool {
        self.runtime.cancel(id)
    }
}

/// How the local engine answers a reply: its decode mode (speculative or not: the same
/// reply), where the conversation's engine state is saved (`None`: nowhere), and the
/// tools it is offered.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalReply {
    pub mode: DecodeMode,
    pub state_file: Option<std::path::PathBuf>,
    /// The tools the conversation's servers offer (Settings › Tools).
    pub tools: Vec<k3_engine::chat::ToolSpec>,
    /// Whether this reply must call one of them.
    pub tool_choice: k3_engine::chat::ToolChoice,
}

impl LocalReply {
    /// One token per pass, nothing saved, no tools.
    pub fn serial() -> Self {
        LocalReply {
            mode: DecodeMode::Incremental,
            state_file: None,
            tools: Vec::new(),
            tool_choice: k3_engine::chat::ToolChoice::Auto,
        }
    }
}

fn opening_error(e: &k3_runtime::RuntimeError, target: &ModelTarget) -> AppError {
    AppError::from(e).with_details(format!("Opening the model folder {}", target.path.display()))
}
