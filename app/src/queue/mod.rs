//! The overnight queue: prompts answered one after another (several at once when the
//! runtime batches) on the runtime the window's chats use, each answer journaled before it
//! counts. A crash or a restart resumes the unfinished items with the same seeds, so they
//! give the tokens they would have, and never runs a finished one twice.
//!
//! Layout: `journal` (the file and its records) · `import` (typed, JSONL, CSV) · `export`
//! (JSONL, CSV) · `eta` (from measured rates) · `runner` (the thread that starts items and
//! the reply handler that ends them).
//! Owns: [`Queue`] — add, pause (running items stop and wait again: they restart from their
//! first token, same seed), resume, cancel one or all, clear the finished, the view, the
//! export — and the [`QueueNotice`]s the app turns into keep-awake and a notification.
//! Must not: hold its lock while calling the runtime (a reply's end can be heard inside
//! `Runtime::reply`); mark an item finished before its line is synced (a journal that cannot
//! be written stops the queue, the item waiting).

pub mod eta;
pub mod export;
pub mod import;
pub mod journal;
mod runner;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use k3_runtime::{JobId, Runtime};

pub use export::{ExportFile, ExportFormat};
pub use import::{ImportFormat, NewItem};
use journal::{Event, Journal};
pub use journal::{ItemSettings, Outcome, QueueItem, Status};
pub use runner::turn;

/// The queue's failures; each names the file, line or item.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The journal has a line this app cannot read; the file is left as it is.
    #[error("{}, line {line}: {reason}", path.display())]
    Journal { path: PathBuf, line: usize, reason: String },
    /// The prompts to import are not in the format chosen (`line` 0: the whole text).
    #[error("{}{reason}", if *line > 0 { format!("line {line}: ") } else { String::new() })]
    Import { line: usize, reason: String },
    #[error("the queue has no item {id}")]
    NoItem { id: u64 },
}

/// What the app hears when the queue starts or stops working.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueNotice {
    /// An item is running (the machine should stay awake).
    Busy,
    /// Nothing runs and nothing can start: all answered, paused, or stopped by a failure.
    Settled(Counts),
}

/// How many items are in each state, and why the queue is not running if it is not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub waiting: usize,
    pub running: usize,
    pub done: usize,
    pub failed: usize,
    pub cancelled: usize,
    pub paused: bool,
    /// Why the queue stopped itself (no model, the drive gone, a journal it cannot write).
    pub halted: Option<String>,
}

/// What added items are sampled with: the new-chat settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemDefaults {
    pub settings: ItemSettings,
    /// The new-chat system prompt; an item's own replaces it.
    pub system: Option<String>,
}

/// One item as the window shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemView {
    pub item: QueueItem,
    pub run: RunView,
}

/// Where an item is.
#[derive(Debug, Clone, PartialEq)]
pub enum RunView {
    Waiting,
    Running {
        /// Prompt positions fed, of the prompt's total (both 0 until the engine starts it).
        prefill: (usize, usize),
        tokens: usize,
        seconds: f64,
        seconds_per_token: Option<f64>,
    },
    Finished(Outcome),
}

/// The whole queue as the window shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueView {
    pub items: Vec<ItemView>,
    pub counts: Counts,
    /// Items run at once (the runtime's batch).
    pub width: usize,
    /// Seconds until all are answered, from this queue's measured rates; `None` before one is.
    pub eta_seconds: Option<f64>,
}

/// The queue: its journal, its items and the thread that runs them.
pub struct Queue {
    shared: Arc<Shared>,
    runner: Option<JoinHandle<()>>,
}

/// Where the queue's notices go.
pub type Notify = Box<dyn Fn(QueueNotice) + Send + Sync>;

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    runtime: Arc<Runtime>,
    notice: Notify,
}

struct State {
    journal: Journal,
    entries: Vec<Entry>,
    paused: bool,
    halted: Option<String>,
    next_id: u64,
    stopping: bool,
    /// The last notice sent was `Busy`.
    busy: bool,
}

struct Entry {
    item: QueueItem,
    run: Run,
}

enum Run {
    Waiting,
    Running(Running),
    Finished(Outcome),
}

struct Running {
    job: Option<JobId>,
    /// Set when the engine takes the reply.
    started: Option<Instant>,
    prefill: (usize, usize),
    tokens: usize,
    seconds_per_token: Option<f64>,
    /// What its end means when it was stopped on purpose.
    then: AfterStop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterStop {
    /// Not stopped by the queue: its end is its outcome.
    Keep,
    /// Paused: it waits again, no line written.
    Requeue,
    /// Cancelled by the user.
    Cancel,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A seed for a new item (stored with it, so a resumed item samples as before).
fn fresh_seed(id: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u64(id);
    h.finish() % 1_000_000_000
}

impl Queue {
    /// Opens the queue kept in `dir` (creating it) and starts running what it left
    /// unfinished, unless it was paused. `notice` hears when it starts and stops working.
    pub fn open(dir: &Path, runtime: Arc<Runtime>, notice: Notify) -> Result<Queue, QueueError> {
        let (journal, events) = Journal::open(dir)?;
        let mut state = State {
            journal,
            entries: Vec::new(),
            paused: false,
            halted: None,
            next_id: 1,
            stopping: false,
            busy: false,
        };
        let read = events.len();
        for event in events {
            state.apply(event);
        }
        let live = state.live_events();
        state.journal.compact(read, &live)?;
        let shared = Arc::new(Shared { state: Mutex::new(state), wake: Condvar::new(), runtime, notice });
        let thread = std::thread::Builder::new().name("k3-queue".into());
        let runner = {
            let shared = shared.clone();
            thread
                .spawn(move || runner::run(&shared))
                .map_err(|source| QueueError::Io { path: dir.to_path_buf(), source })?
        };
        Ok(Queue { shared, runner: Some(runner) })
    }

    /// Adds `items` at the end, sampled with `defaults`; their ids.
    pub fn add(&self, items: Vec<NewItem>, defaults: &ItemDefaults) -> Result<Vec<u64>, QueueError> {
        let mut st = lock(&self.shared.state);
        let mut ids = Vec::with_capacity(items.len());
        for new in items {
            let id = st.next_id;
            let item = QueueItem {
                id,
                label: new.label.unwrap_or_else(|| id.to_string()),
                prompt: new.prompt,
                system: new.system.or_else(|| defaults.system.clone()).filter(|s| !s.trim().is_empty()),
                settings: defaults.settings.clone(),
                seed: fresh_seed(id),
                added_at: unix_now(),
            };
            st.record(Event::Add { item })?;
            ids.push(id);
        }
        self.shared.wake.notify_all();
        Ok(ids)
    }

    /// Stops starting items; the running ones stop and wait again.
    pub fn pause(&self) -> Result<(), QueueError> {
        let jobs = {
            let mut st = lock(&self.shared.state);
            if !st.paused {
                st.record(Event::Pause)?;
            }
            st.stop_running(None, AfterStop::Requeue)
        };
        self.cancel_jobs(&jobs);
        Ok(())
    }

    /// Starts items again (and clears a stop caused by a failure, to try again).
    pub fn resume(&self) -> Result<(), QueueError> {
        let mut st = lock(&self.shared.state);
        if st.paused {
            st.record(Event::Resume)?;
        }
        st.halted = None;
        self.shared.wake.notify_all();
        Ok(())
    }

    /// Cancels item `id`: a waiting one at once, a running one when its reply stops (what
    /// it wrote is kept). A finished item stays as it is.
    pub fn cancel(&self, id: u64) -> Result<(), QueueError> {
        let jobs = {
            let mut st = lock(&self.shared.state);
            let at = st.entries.iter().position(|e| e.item.id == id).ok_or(QueueError::NoItem { id })?;
            if matches!(st.entries[at].run, Run::Waiting) {
                st.record(Event::Finish { id, outcome: cancelled_outcome(None) })?;
            }
            st.stop_running(Some(id), AfterStop::Cancel)
        };
        self.cancel_jobs(&jobs);
        self.shared.wake.notify_all();
        Ok(())
    }

    /// Cancels every waiting and running item; how many.
    pub fn cancel_all(&self) -> Result<usize, QueueError> {
        let (jobs, n) = {
            let mut st = lock(&self.shared.state);
            let waiting: Vec<u64> =
                st.entries.iter().filter(|e| matches!(e.run, Run::Waiting)).map(|e| e.item.id).collect();
            for &id in &waiting {
                st.record(Event::Finish { id, outcome: cancelled_outcome(None) })?;
            }
            let jobs = st.stop_running(None, AfterStop::Cancel);
            (jobs.clone(), waiting.len() + jobs.len())
        };
        self.cancel_jobs(&jobs);
        self.shared.wake.notify_all();
        Ok(n)
    }

    /// Removes the finished items from the list (after an export, say); how many.
    pub fn clear_finished(&self) -> Result<usize, QueueError> {
        let mut st = lock(&self.shared.state);
        let finished: Vec<u64> =
            st.entries.iter().filter(|e| matches!(e.run, Run::Finished(_))).map(|e| e.item.id).collect();
        for &id in &finished {
            st.record(Event::Remove { id })?;
        }
        Ok(finished.len())
    }

    /// The queue as the window shows it.
    pub fn view(&self) -> QueueView {
        let st = lock(&self.shared.state);
        let width = self.shared.runtime.batch();
        let items: Vec<ItemView> = st.entries.iter().map(Entry::view).collect();
        let answered: Vec<f64> =
            st.finished().filter(|(_, o)| o.status == Status::Done).map(|(_, o)| o.seconds).collect::<Vec<_>>();
        let running: Vec<f64> = items
            .iter()
            .filter_map(|i| match i.run {
                RunView::Running { seconds, .. } => Some(seconds),
                RunView::Waiting | RunView::Finished(_) => None,
            })
            .collect();
        let counts = st.counts();
        let eta_seconds = eta::eta_seconds(&answered, counts.waiting, &running, width);
        QueueView { items, counts, width, eta_seconds }
    }

    /// The finished items' answers, in queue order.
    pub fn export(&self, format: ExportFormat) -> ExportFile {
        let st = lock(&self.shared.state);
        let finished: Vec<(&QueueItem, &Outcome)> = st.finished().collect();
        export::render(&finished, format)
    }

    fn cancel_jobs(&self, jobs: &[JobId]) {
        for &job in jobs {
            self.shared.runtime.cancel(job);
        }
    }
}

impl Drop for Queue {
    /// Stops the runner; a running item's reply is stopped and it waits for the next open.
    fn drop(&mut self) {
        let jobs = {
            let mut st = lock(&self.shared.state);
            st.stopping = true;
            st.stop_running(None, AfterStop::Requeue)
        };
        self.cancel_jobs(&jobs);
        self.shared.wake.notify_all();
        if let Some(runner) = self.runner.take() {
            let _ = runner.join();
        }
    }
}

/// The outcome of an item cancelled with `partial` written.
fn cancelled_outcome(partial: Option<String>) -> Outcome {
    Outcome {
        status: Status::Cancelled,
        text: partial.unwrap_or_default(),
        think: None,
        finish: Some("cancelled".into()),
        error: None,
        prompt_tokens: 0,
        output_tokens: 0,
        seconds: 0.0,
        finished_at: unix_now(),
    }
}

impl State {
    /// Applies `event` to the items (replay and every change go through here).
    fn apply(&mut self, event: Event) {
        match event {
            Event::Add { item } => {
                self.next_id = self.next_id.max(item.id + 1);
                self.entries.push(Entry { item, run: Run::Waiting });
            }
            Event::Finish { id, outcome } => {
                if let Some(e) = self.entries.iter_mut().find(|e| e.item.id == id) {
                    e.run = Run::Finished(outcome);
                }
            }
            Event::Remove { id } => self.entries.retain(|e| e.item.id != id),
            Event::Pause => self.paused = true,
            Event::Resume => self.paused = false,
        }
    }

    /// Journals `event`, then applies it.
    fn record(&mut self, event: Event) -> Result<(), QueueError> {
        self.journal.append(&event)?;
        self.apply(event);
        Ok(())
    }

    /// The events that rebuild the queue as it is (compaction).
    fn live_events(&self) -> Vec<Event> {
        let mut events: Vec<Event> = self.paused.then_some(Event::Pause).into_iter().collect();
        for e in &self.entries {
            events.push(Event::Add { item: e.item.clone() });
            if let Run::Finished(outcome) = &e.run {
                events.push(Event::Finish { id: e.item.id, outcome: outcome.clone() });
            }
        }
        events
    }

    /// Marks the running items (only `id`, when given) to end as `then`; their job ids.
    fn stop_running(&mut self, id: Option<u64>, then: AfterStop) -> Vec<JobId> {
        let mut jobs = Vec::new();
        for e in self.entries.iter_mut().filter(|e| id.is_none_or(|id| e.item.id == id)) {
            if let Run::Running(r) = &mut e.run {
                r.then = then;
                jobs.extend(r.job);
            }
        }
        jobs
    }

    fn finished(&self) -> impl Iterator<Item = (&QueueItem, &Outcome)> {
        self.entries.iter().filter_map(|e| match &e.run {
            Run::Finished(o) => Some((&e.item, o)),
            Run::Waiting | Run::Running(_) => None,
        })
    }

    fn counts(&self) -> Counts {
        let mut c = Counts { paused: self.paused, halted: self.halted.clone(), ..Counts::default() };
        for e in &self.entries {
            match &e.run {
                Run::Waiting => c.waiting += 1,
                Run::Running(_) => c.running += 1,
                Run::Finished(o) => match o.status {
                    Status::Done => c.done += 1,
                    Status::Failed => c.failed += 1,
                    Status::Cancelled => c.cancelled += 1,
                },
            }
        }
        c
    }
}

impl Entry {
    fn view(&self) -> ItemView {
        let run = match &self.run {
            Run::Waiting => RunView::Waiting,
            Run::Running(r) => RunView::Running {
                prefill: r.prefill,
                tokens: r.tokens,
                seconds: r.started.map_or(0.0, |t| t.elapsed().as_secs_f64()),
                seconds_per_token: r.seconds_per_token,
            },
            Run::Finished(o) => RunView::Finished(o.clone()),
        };
        ItemView { item: self.item.clone(), run }
    }
}
