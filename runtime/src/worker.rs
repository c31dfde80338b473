//! [`Runtime`]: one worker thread that owns the loaded model and runs jobs in order.
//!
//! Owns: the job queue (FIFO: model opens, replies — chat turns and raw completions — and
//! replans; replies next to each other run together up to the batch, `together`), remote
//! replies started on threads of their own beside it, the
//! registry of cancel tokens by job id, the cached chat
//! session, and keeping the [`MetricsProbe`] current. Opening another model or replanning happens between
//! replies, never during one; a replan keeps the cached chat session.
//! Must not: run on a UI thread, or block on anything but its queue and the engine.
//! Easy to break: a cancel must reach a queued job too: its token is registered before
//! the job is queued, and the job ends as cancelled when it runs. The token is removed
//! before the job's `end`, so `cancel` is false once the end is seen.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

use k3_engine::{BudgetChoice, CancelToken};

use crate::count::PromptCounter;
use crate::error::RuntimeError;
use crate::handler::{JobId, ReplyHandler, ReplyOutcome};
use crate::job::{Cancels, Job, ReplanProgress, ReplanRequest, ReplyJob, ReplyKind};
use crate::kept::{KeptChats, KeptOnDisk};
use crate::lock;
use crate::model::{LoadedModel, ModelRequest, ModelSummary};
use crate::probe::{MetricsProbe, OpenFailure};
use crate::remote::{run_remote_reply, RemoteBackend};
use crate::together::{answer, run_together, Shared};

/// The handle front ends use; share it behind an `Arc`.
pub struct Runtime {
    /// `None` once [`Runtime::shutdown`] closed it.
    queue: Mutex<Option<Sender<Job>>>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    cancels: Cancels,
    /// Remote replies' tokens: they run beside the queue, so they are never "ahead" of a local one.
    remote_cancels: Cancels,
    next_job: AtomicU64,
    probe: MetricsProbe,
    counter: Counter,
    batch: usize,
}

/// The open model's prompt counter, replaced by the worker when a model opens.
type Counter = Arc<Mutex<Option<Arc<PromptCounter>>>>;

impl Runtime {
    /// Starts the worker thread with no model loaded, keeping no conversation on disk.
    pub fn start() -> std::io::Result<Runtime> {
        Self::start_keeping(KeptOnDisk::default())
    }

    /// [`Runtime::start`], keeping the conversations pushed out of RAM in `on_disk`'s folder.
    pub fn start_keeping(on_disk: KeptOnDisk) -> std::io::Result<Runtime> {
        Self::start_batching(on_disk, 1)
    }

    /// [`Runtime::start_keeping`], running up to `batch` replies at once (at most the
    /// sequences the open model's plan holds, `MemoryOptions::sequences`): their forward
    /// passes are shared, and each gets the tokens it would get alone.
    pub fn start_batching(on_disk: KeptOnDisk, batch: usize) -> std::io::Result<Runtime> {
        let batch = batch.max(1);
        let (tx, rx) = mpsc::channel();
        let cancels: Cancels = Arc::new(Mutex::new(HashMap::new()));
        let probe = MetricsProbe::new();
        let kept = Mutex::new(KeptChats::open(on_disk));
        let counter: Counter = Arc::new(Mutex::new(None));
        let worker = Worker {
            cancels: cancels.clone(),
            probe: probe.clone(),
            model: None,
            kept,
            counter: counter.clone(),
            batch,
        };
        let worker = std::thread::Builder::new().name("k3-engine-worker".into()).spawn(move || worker.run(rx))?;
        let remote_cancels = Arc::new(Mutex::new(HashMap::new()));
        Ok(Runtime {
            queue: Mutex::new(Some(tx)),
            worker: Mutex::new(Some(worker)),
            cancels,
            remote_cancels,
            next_job: AtomicU64::new(1),
            probe,
            counter,
            batch,
        })
    }

    /// The most replies this runtime runs at once.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Queues `job`; gives it back when the worker has stopped.
    fn submit(&self, job: Job) -> Result<(), Box<Job>> {
        match lock(&self.queue).as_ref() {
            Some(queue) => queue.send(job).map_err(|mpsc::SendError(job)| Box::new(job)),
            None => Err(Box::new(job)),
        }
    }

    /// Closes the queue, lets the worker finish the jobs already queued, and waits while it
    /// keeps the conversations it holds in RAM on disk (when it keeps any there), so a
    /// restart continues them. Jobs submitted afterwards are refused as after a crash.
    pub fn shutdown(&self) {
        drop(lock(&self.queue).take());
        if let Some(worker) = lock(&self.worker).take() {
            let _ = worker.join();
        }
    }

    /// Counts prompt tokens as the open model would feed them (`None` before a model opens).
    pub fn prompt_counter(&self) -> Option<Arc<PromptCounter>> {
        lock(&self.counter).clone()
    }

    /// The live view of this runtime.
    pub fn probe(&self) -> MetricsProbe {
        self.probe.clone()
    }

    /// Queues opening `request` after the jobs already queued; returns at once.
    pub fn queue_open(&self, request: ModelRequest) {
        let (reply, _ignored) = mpsc::channel();
        self.probe.open_queued();
        let path = request.path().to_path_buf();
        if self.submit(Job::Open { request, reply }).is_err() {
            self.probe.opened(Err(OpenFailure { path, error: Arc::new(RuntimeError::WorkerGone) }));
        }
    }

    /// Opens `request` after the jobs already queued; blocks until it is loaded or
    /// refused (the previous model stays in use when refused).
    pub fn open_model(&self, request: ModelRequest) -> Result<ModelSummary, Arc<RuntimeError>> {
        let (reply, rx) = mpsc::channel();
        self.probe.open_queued();
        let path = request.path().to_path_buf();
        if self.submit(Job::Open { request, reply }).is_err() {
            let error = Arc::new(RuntimeError::WorkerGone);
            self.probe.opened(Err(OpenFailure { path, error: error.clone() }));
            return Err(error);
        }
        rx.recv().map_err(|_| Arc::new(RuntimeError::WorkerGone))?
    }

    /// Queues a reply; returns its id at once. The handler hears `queued` first.
    pub fn reply(&self, handler: Box<dyn ReplyHandler>) -> JobId {
        self.queue_reply(ReplyKind::Chat, handler)
    }

    /// Queues a raw continuation (the handler's `begin_completion` gives the prompt);
    /// returns its id at once. Same queue, cancel and outcome as [`Runtime::reply`].
    pub fn complete(&self, handler: Box<dyn ReplyHandler>) -> JobId {
        self.queue_reply(ReplyKind::Completion, handler)
    }

    fn queue_reply(&self, kind: ReplyKind, mut handler: Box<dyn ReplyHandler>) -> JobId {
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        let cancel = CancelToken::new();
        // Every reply not yet ended holds a cancel token: those are the ones ahead of this one.
        let ahead = {
            let mut cancels = lock(&self.cancels);
            let ahead = cancels.len();
            cancels.insert(id, cancel.clone());
            ahead
        };
        self.probe.queued(1);
        handler.queued(id, ahead);
        let refused = self.submit(Job::Reply(ReplyJob { id, kind, cancel, handler })).err().map(|job| *job);
        if let Some(Job::Reply(ReplyJob { mut handler, .. })) = refused {
            self.probe.queued(-1);
            lock(&self.cancels).remove(&id);
            let error = Arc::new(RuntimeError::WorkerGone);
            handler.end(id, ReplyOutcome::Failed { error, partial_text: None });
        }
        id
    }

    /// Starts a reply answered by `backend` on a thread of its own (a remote reply does not
    /// wait behind local jobs, nor they behind it); returns its id at once. The handler hears
    /// `queued` with position 0 first, then the same calls as a local reply; [`Runtime::cancel`]
    /// stops it.
    pub fn reply_remote(&self, backend: Arc<dyn RemoteBackend>, mut handler: Box<dyn ReplyHandler>) -> JobId {
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        let cancel = CancelToken::new();
        lock(&self.remote_cancels).insert(id, cancel.clone());
        handler.queued(id, 0);
        // The handler waits in a slot the thread takes it from, so a thread the OS refuses
        // still leaves it here to hear its one end.
        let slot = Arc::new(Mutex::new(Some(handler)));
        let (taken, cancels) = (slot.clone(), self.remote_cancels.clone());
        let thread = std::thread::Builder::new().name(format!("k3-remote-reply-{id}"));
        let spawned = thread.spawn(move || {
            let Some(mut handler) = lock(&taken).take() else { return };
            let unregister = || {
                lock(&cancels).remove(&id);
            };
            run_remote_reply(id, backend.as_ref(), &cancel, handler.as_mut(), unregister);
        });
        if let Err(e) = spawned {
            lock(&self.remote_cancels).remove(&id);
            if let Some(mut handler) = lock(&slot).take() {
                let error = Arc::new(RuntimeError::Remote {
                    host: String::new(),
                    message: format!("no thread for the reply: {e}"),
                });
                handler.end(id, ReplyOutcome::Failed { error, partial_text: None });
            }
        }
        id
    }

    /// Switches the loaded model to another memory plan after the queued jobs, keeping
    /// the cached chat session; blocks until done. `None` keeps every weight resident.
    pub fn replan(&self, choice: Option<BudgetChoice>, progress: ReplanProgress) -> Result<ModelSummary, RuntimeError> {
        self.replan_with(ReplanRequest { choice, context_length: None, residency: None }, progress)
    }

    /// [`Runtime::replan`] that may also change the context length and the residency rule.
    pub fn replan_with(&self, request: ReplanRequest, progress: ReplanProgress) -> Result<ModelSummary, RuntimeError> {
        let (reply, rx) = mpsc::channel();
        if self.submit(Job::Replan { request, progress, reply }).is_err() {
            return Err(RuntimeError::WorkerGone);
        }
        rx.recv().map_err(|_| RuntimeError::WorkerGone)?
    }

    /// Requests a stop of job `id` (queued or running); false when no such job is live.
    pub fn cancel(&self, id: JobId) -> bool {
        let token = lock(&self.cancels).get(&id).cloned();
        match token.or_else(|| lock(&self.remote_cancels).get(&id).cloned()) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// The worker thread's state.
struct Worker {
    cancels: Cancels,
    probe: MetricsProbe,
    model: Option<LoadedModel>,
    kept: Mutex<KeptChats>,
    counter: Counter,
    batch: usize,
}

impl Worker {
    fn run(mut self, jobs: Receiver<Job>) {
        // A job taken from the queue while replies ran, waiting for them to end.
        let mut held = std::collections::VecDeque::new();
        while let Some(job) = held.pop_front().or_else(|| jobs.recv().ok()) {
            match job {
                Job::Open { request, reply } => {
                    let _ = reply.send(self.open(&request));
                }
                Job::Reply(job) => self.replies(job, &jobs, &mut held),
                Job::Replan { request, progress, reply } => {
                    let _ = reply.send(self.replan(request, progress));
                }
            }
        }
        // The queue closed (`Runtime::shutdown`): what is kept in RAM goes to disk.
        if let Some(model) = &self.model {
            lock(&self.kept).keep_all_on_disk(model);
        }
    }

    /// Runs `first` and the replies queued right behind it, together (`together`).
    fn replies(&mut self, first: ReplyJob, jobs: &Receiver<Job>, held: &mut std::collections::VecDeque<Job>) {
        let Some(model) = &self.model else {
            return self.refuse_without_model(first);
        };
        let limit = self.batch.min(model.engine.sequences()).max(1);
        let shared = Shared { model, kept: &self.kept, probe: &self.probe, cancels: &self.cancels };
        if limit == 1 {
            // One at a time: on this thread, as every reply ran before batching (no thread,
            // stack or malloc arena of its own).
            return answer(&shared, first);
        }
        run_together(&shared, first, jobs, held, limit);
    }

    /// Ends a reply queued while no model is open with why none is.
    fn refuse_without_model(&self, job: ReplyJob) {
        let ReplyJob { id, mut handler, .. } = job;
        self.probe.queued(-1);
        let failed = self.probe.snapshot().model_error;
        let error = failed.map_or_else(|| Arc::new(RuntimeError::NoModel), |f| f.error);
        self.unregister(id);
        handler.end(id, ReplyOutcome::Failed { error, partial_text: None });
    }

    /// Replaces the model; on failure the previous one stays in use.
    fn open(&mut self, request: &ModelRequest) -> Result<ModelSummary, Arc<RuntimeError>> {
        self.probe.opening(request.path().to_path_buf());
        let probe = self.probe.clone();
        match LoadedModel::open(request, &mut |done, total| probe.opening_progress(done, total)) {
            Ok(model) => {
                let summary = model.summary.clone();
                log::info!("{}", opened_line(&summary));
                lock(&self.kept).clear_ram();
                let counter = PromptCounter { template: model.template.clone(), tokenizer: model.tokenizer.clone() };
                *lock(&self.counter) = Some(Arc::new(counter));
                self.probe.opened(Ok((summary.clone(), model.engine.counters())));
                self.model = Some(model);
                Ok(summary)
            }
            Err(e) => {
                log::warn!("opening {} failed: {e}", request.path().display());
                let error = Arc::new(e);
                self.probe.opened(Err(OpenFailure { path: request.path().to_path_buf(), error: error.clone() }));
                Err(error)
            }
        }
    }

    fn replan(&mut self, request: ReplanRequest, mut progress: ReplanProgress) -> Result<ModelSummary, RuntimeError> {
        let model = self.model.as_mut().ok_or(RuntimeError::NoModel)?;
        self.probe.replanning(0, 0);
        let probe = self.probe.clone();
        let before = model.engine.context_length();
        let context_length = request.context_length.unwrap_or(before);
        let rule = request.residency.unwrap_or(model.engine.residency_rule());
        let result = model.engine.replan_with(request.choice, (context_length, rule), &mut |done, total| {
            probe.replanning(done, total);
            progress(done, total)
        });
        if result.is_ok() && context_length != before {
            // Sessions reserve their KV cache when made: the next turn starts one of the new size.
            lock(&self.kept).clear_ram();
        }
        model.refresh_summary();
        self.probe.model_changed(model.summary.clone());
        self.probe.idle();
        result?;
        Ok(model.summary.clone())
    }

    fn unregister(&self, id: JobId) {
        lock(&self.cancels).remove(&id);
    }
}

/// The log's line for a model opened (the host's logger, if it installed one, keeps it).
fn opened_line(s: &ModelSummary) -> String {
    let memory = s.plan.as_ref().map_or_else(
        || "every weight in RAM".to_string(),
        |p| {
            format!(
                "{}/{} layers pinned, {} expert slots, plan {}",
                p.pinned_layers,
                s.layers,
                p.cache_slots,
                k3_plan::format_bytes(p.total_bytes)
            )
        },
    );
    format!(
        "opened {} in {} ms: {memory}, context {}, {} compute threads, {} expert reads in flight",
        s.path.display(),
        s.load_time.as_millis(),
        s.context_length,
        s.compute_threads,
        s.io_threads
    )
}
