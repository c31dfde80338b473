//! The overnight queue: prompts answered one after another (several at once when the
//! runtime batches) on the runtime the window's chats use, each answer journaled before it
//! counts. A crash or a restart resumes the unfinished items with the same seeds, so they
//! give the tokens they would have, and never runs a finished one twice.
//!
//! Layout: `journal` (the file and its records) · `import` (typed, JSONL, CSV) · `export`
//! (JSONL, CSV) · `eta` (from measured rates) · `state` (the items behind the lock, and
//! the views) · `error` · `runner` (the thread that starts items and the reply handler
//! that ends them).
//! Owns: [`Queue`] — add, pause (running items stop and wait again: they restart from their
//! first token, same seed), resume, cancel one or all, clear the finished, the view, the
//! export — and the [`QueueNotice`]s the app turns into keep-awake and a notification.
//! Must not: hold its lock while calling the runtime (a reply's end can be heard inside
//! `Runtime::reply`); mark an item finished before its line is synced (a journal that cannot
//! be written stops the queue, the item waiting).

pub mod error;
pub mod eta;
pub mod export;
pub mod import;
pub mod journal;
mod runner;
mod state;

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use k3_runtime::{JobId, Runtime};

pub use error::QueueError;
pub use export::{ExportFile, ExportFormat};
pub use import::{ImportFormat, NewItem};
use journal::{Event, Journal};
pub use journal::{ItemSettings, Outcome, QueueItem, Status};
pub use runner::turn;
use state::{cancelled_outcome, fresh_seed, lock, unix_now, AfterStop, Entry, Run, Shared, State};
pub use state::{Counts, ItemDefaults, ItemView, Notify, QueueNotice, QueueView, RunView};

/// The queue: its journal, its items and the thread that runs them.
pub struct Queue {
    shared: Arc<Shared>,
    runner: Option<JoinHandle<()>>,
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
