//! The engine worker: one thread that owns the loaded model and runs jobs in order.
//!
//! Owns: the job queue (FIFO: model opens and generations, one at a time), the registry
//! of cancel tokens by job id, and the last model error. Opening another model happens
//! between generations, never during one.
//! Must not: run on the main (UI) thread, or block on anything but its queue and the engine.
//! Easy to break: a cancel must reach a queued job too: its token is registered before
//! the job is queued, and the job ends as cancelled when it runs. The token is removed
//! before the job's terminal event is emitted, so `cancel` is false once `finished` is seen.

mod model;
mod reply;
mod sink;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

use k3_engine::CancelToken;

pub use model::{LoadedModel, ModelTarget};
pub use reply::{generate_params, JobKind};

use crate::history::HistoryStore;
use crate::ipc::dto::{ModelInfo, ModelStatus};
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::events::{EventEmitter, GenerationEvent};
use reply::{CachedChat, GenerateJob};

enum Job {
    Open { target: ModelTarget, reply: Sender<Result<ModelInfo, IpcError>> },
    Status { reply: Sender<ModelStatus> },
    Generate(GenerateJob),
}

/// The handle commands use; cheap to share.
pub struct Worker {
    queue: Mutex<Sender<Job>>,
    cancels: Arc<Mutex<HashMap<u64, CancelToken>>>,
    next_job: AtomicU64,
    pending: Arc<AtomicUsize>,
}

impl Worker {
    /// Starts the worker thread and queues the opening of `startup`.
    pub fn spawn(store: Arc<Mutex<HistoryStore>>, startup: ModelTarget) -> std::io::Result<Worker> {
        let (tx, rx) = mpsc::channel();
        let cancels = Arc::new(Mutex::new(HashMap::new()));
        let pending = Arc::new(AtomicUsize::new(0));
        let loop_state = WorkerLoop {
            store,
            cancels: cancels.clone(),
            pending: pending.clone(),
            model: None,
            last_error: None,
            chat: None,
        };
        std::thread::Builder::new().name("k3-engine-worker".into()).spawn(move || loop_state.run(rx))?;
        let worker = Worker { queue: Mutex::new(tx), cancels, next_job: AtomicU64::new(1), pending };
        let (reply, _ignored) = mpsc::channel();
        worker.submit(Job::Open { target: startup, reply });
        Ok(worker)
    }

    fn submit(&self, job: Job) -> bool {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).send(job).is_ok()
    }

    /// Opens `target` after the jobs already queued; blocks until it is loaded or refused.
    pub fn open_model(&self, target: ModelTarget) -> Result<ModelInfo, IpcError> {
        let (reply, rx) = mpsc::channel();
        if !self.submit(Job::Open { target, reply }) {
            return Err(worker_gone());
        }
        rx.recv().map_err(|_| worker_gone())?
    }

    /// The model in use once the queued jobs (the startup load among them) are done.
    pub fn status(&self) -> ModelStatus {
        let (reply, rx) = mpsc::channel();
        if !self.submit(Job::Status { reply }) {
            return ModelStatus { model: None, error: Some(worker_gone()) };
        }
        rx.recv().unwrap_or(ModelStatus { model: None, error: Some(worker_gone()) })
    }

    /// Queues a generation; returns its job id at once. Events go to `emit`, starting
    /// with `queued`.
    pub fn generate(&self, conversation_id: i64, kind: JobKind, mut emit: EventEmitter) -> u64 {
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        let cancel = CancelToken::new();
        if let Ok(mut c) = self.cancels.lock() {
            c.insert(id, cancel.clone());
        }
        let position = self.pending.fetch_add(1, Ordering::AcqRel) as u32;
        emit(GenerationEvent::Queued { job_id: id, position });
        let job = Job::Generate(GenerateJob { id, conversation_id, kind, cancel, emit });
        let queue = self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(mpsc::SendError(Job::Generate(mut job))) = queue.send(job) {
            unregister(&self.cancels, id);
            (job.emit)(GenerationEvent::Failed { job_id: id, error: worker_gone(), message: None });
        }
        id
    }

    /// Requests a stop of job `id` (queued or running); false when no such job is live.
    pub fn cancel(&self, id: u64) -> bool {
        match self.cancels.lock().ok().and_then(|c| c.get(&id).cloned()) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

fn worker_gone() -> IpcError {
    IpcError::internal("the engine worker has stopped")
}

/// The worker thread's state.
struct WorkerLoop {
    store: Arc<Mutex<HistoryStore>>,
    cancels: Arc<Mutex<HashMap<u64, CancelToken>>>,
    pending: Arc<AtomicUsize>,
    model: Option<LoadedModel>,
    last_error: Option<IpcError>,
    chat: Option<CachedChat>,
}

impl WorkerLoop {
    fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            match job {
                Job::Open { target, reply } => {
                    let _ = reply.send(self.open(&target));
                }
                Job::Status { reply } => {
                    let model = self.model.as_ref().map(|m| m.info.clone());
                    let _ = reply.send(ModelStatus { model, error: self.last_error.clone() });
                }
                Job::Generate(job) => self.generate(job),
            }
        }
    }

    /// Replaces the model; on failure the previous one stays in use.
    fn open(&mut self, target: &ModelTarget) -> Result<ModelInfo, IpcError> {
        match LoadedModel::open(target) {
            Ok(model) => {
                let info = model.info.clone();
                self.chat = None;
                self.model = Some(model);
                self.last_error = None;
                Ok(info)
            }
            Err(e) => {
                self.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    fn generate(&mut self, mut job: GenerateJob) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        let id = job.id;
        job.emit = unregister_before_end(job.emit, self.cancels.clone(), id);
        match &self.model {
            Some(model) => reply::run(model, &mut self.chat, &self.store, job),
            None => {
                let error = self.last_error.clone().unwrap_or_else(|| {
                    IpcError::new(ErrorCode::ModelNotLoaded, "no model is loaded; open a model folder first")
                });
                (job.emit)(GenerationEvent::Failed { job_id: id, error, message: None });
            }
        }
        // Every path above ends with a terminal event, which already unregistered the job;
        // this covers an emitter that was never given one.
        unregister(&self.cancels, id);
    }
}

/// Wraps `emit` so the job's cancel token is gone before its terminal event is sent: a
/// client that has seen `finished` or `failed` finds the job no longer cancellable.
fn unregister_before_end(
    mut emit: EventEmitter,
    cancels: Arc<Mutex<HashMap<u64, CancelToken>>>,
    id: u64,
) -> EventEmitter {
    Box::new(move |event| {
        if event.is_terminal() {
            unregister(&cancels, id);
        }
        emit(event)
    })
}

fn unregister(cancels: &Mutex<HashMap<u64, CancelToken>>, id: u64) {
    cancels.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&id);
}
