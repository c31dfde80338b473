//! The queue's state behind its lock: the items and what each is doing, the journal they
//! are replayed from and recorded to, and the views and counts the window shows. A leaf the
//! handle (`Queue`, in `mod.rs`) and the runner thread (`runner`) both work on.
//!
//! Owns: [`QueueNotice`], [`Counts`], the views, and the private `Shared`, `State`,
//! `Entry`, `Run` and `Running`.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use k3_runtime::{JobId, Runtime};

use super::error::QueueError;
use super::journal::{Event, ItemSettings, Journal, Outcome, QueueItem, Status};

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

/// Where the queue's notices go.
pub type Notify = Box<dyn Fn(QueueNotice) + Send + Sync>;

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) wake: Condvar,
    pub(super) runtime: Arc<Runtime>,
    pub(super) notice: Notify,
}

pub(super) struct State {
    pub(super) journal: Journal,
    pub(super) entries: Vec<Entry>,
    pub(super) paused: bool,
    pub(super) halted: Option<String>,
    pub(super) next_id: u64,
    pub(super) stopping: bool,
    /// The last notice sent was `Busy`.
    pub(super) busy: bool,
}

pub(super) struct Entry {
    pub(super) item: QueueItem,
    pub(super) run: Run,
}

pub(super) enum Run {
    Waiting,
    Running(Running),
    Finished(Outcome),
}

pub(super) struct Running {
    pub(super) job: Option<JobId>,
    /// Set when the engine takes the reply.
    pub(super) started: Option<Instant>,
    pub(super) prefill: (usize, usize),
    pub(super) tokens: usize,
    pub(super) seconds_per_token: Option<f64>,
    /// What its end means when it was stopped on purpose.
    pub(super) then: AfterStop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterStop {
    /// Not stopped by the queue: its end is its outcome.
    Keep,
    /// Paused: it waits again, no line written.
    Requeue,
    /// Cancelled by the user.
    Cancel,
}

pub(super) fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A seed for a new item (stored with it, so a resumed item samples as before).
pub(super) fn fresh_seed(id: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u64(id);
    h.finish() % 1_000_000_000
}

/// The outcome of an item cancelled with `partial` written.
pub(super) fn cancelled_outcome(partial: Option<String>) -> Outcome {
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
    pub(super) fn apply(&mut self, event: Event) {
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
    pub(super) fn record(&mut self, event: Event) -> Result<(), QueueError> {
        self.journal.append(&event)?;
        self.apply(event);
        Ok(())
    }

    /// The events that rebuild the queue as it is (compaction).
    pub(super) fn live_events(&self) -> Vec<Event> {
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
    pub(super) fn stop_running(&mut self, id: Option<u64>, then: AfterStop) -> Vec<JobId> {
        let mut jobs = Vec::new();
        for e in self.entries.iter_mut().filter(|e| id.is_none_or(|id| e.item.id == id)) {
            if let Run::Running(r) = &mut e.run {
                r.then = then;
                jobs.extend(r.job);
            }
        }
        jobs
    }

    pub(super) fn finished(&self) -> impl Iterator<Item = (&QueueItem, &Outcome)> {
        self.entries.iter().filter_map(|e| match &e.run {
            Run::Finished(o) => Some((&e.item, o)),
            Run::Waiting | Run::Running(_) => None,
        })
    }

    pub(super) fn counts(&self) -> Counts {
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
    pub(super) fn view(&self) -> ItemView {
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
