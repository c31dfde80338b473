//! The queue's thread and its replies: starts waiting items on the runtime (up to its batch
//! at once, none while paused or stopped by a failure), and turns each reply's end into a
//! journaled outcome.
//!
//! Owns: [`run`] (the loop), [`QueueReply`] (the runtime's `ReplyHandler` for one item: the
//! turn it answers, its progress, its end), the turn an item is (a new conversation of one
//! user message, keyed `ConversationKey::Queue`: the runtime reuses a kept session only when
//! it holds exactly the turn's history, and an item's is empty), and which failures are the
//! item's (the engine refused its input: it fails) and which are the queue's (no model, the
//! worker or the drive gone: the queue stops and the item waits).
//! Must not: call the runtime with the state locked.

use std::sync::Arc;
use std::time::Instant;

use k3_engine::chat::{ChatMode, TurnInput};
use k3_engine::{DecodeMode, FinishReason, GenerateParams, Sampling};
use k3_runtime::{ChatTurn, ConversationKey, JobId, ReplyHandler, ReplyOutcome, ReplyProgress};

use super::journal::{Event, Outcome, QueueItem, Status};
use super::state::{cancelled_outcome, lock, unix_now, AfterStop, Counts, QueueNotice, Run, Running, Shared, State};

/// The runner: starts what can start, tells the app when the queue starts or stops working,
/// sleeps until something changes; returns when the queue is dropped.
pub(super) fn run(shared: &Arc<Shared>) {
    loop {
        let (start, notice) = {
            let mut st = lock(&shared.state);
            loop {
                if st.stopping {
                    return;
                }
                let start = st.next_start(shared.runtime.batch());
                let notice = st.busy_changed();
                if start.is_some() || notice.is_some() {
                    break (start, notice);
                }
                st = shared.wake.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        };
        if let Some(notice) = notice {
            (shared.notice)(notice);
        }
        if let Some(item) = start {
            let id = item.id;
            let job = shared.runtime.reply(Box::new(QueueReply { shared: shared.clone(), item }));
            let stop = {
                let mut st = lock(&shared.state);
                st.running_mut(id).map(|r| {
                    r.job = Some(job);
                    r.then != AfterStop::Keep
                })
            };
            // Paused or cancelled before its id was known.
            if stop == Some(true) {
                shared.runtime.cancel(job);
            }
        }
    }
}

impl State {
    /// The first waiting item, marked running, when one may start.
    fn next_start(&mut self, width: usize) -> Option<QueueItem> {
        let running = self.entries.iter().filter(|e| matches!(e.run, Run::Running(_))).count();
        if self.paused || self.halted.is_some() || running >= width.max(1) {
            return None;
        }
        let entry = self.entries.iter_mut().find(|e| matches!(e.run, Run::Waiting))?;
        entry.run = Run::Running(Running {
            job: None,
            started: None,
            prefill: (0, 0),
            tokens: 0,
            seconds_per_token: None,
            then: AfterStop::Keep,
        });
        Some(entry.item.clone())
    }

    /// `Busy` or `Settled` when the queue started or stopped working since the last notice.
    fn busy_changed(&mut self) -> Option<QueueNotice> {
        let counts: Counts = self.counts();
        let can_start = !counts.paused && counts.halted.is_none() && counts.waiting > 0;
        let busy = counts.running > 0 || can_start;
        if busy == self.busy {
            return None;
        }
        self.busy = busy;
        Some(if busy { QueueNotice::Busy } else { QueueNotice::Settled(counts) })
    }

    fn running_mut(&mut self, id: u64) -> Option<&mut Running> {
        self.entries.iter_mut().find(|e| e.item.id == id).and_then(|e| match &mut e.run {
            Run::Running(r) => Some(r),
            Run::Waiting | Run::Finished(_) => None,
        })
    }

    /// Item `id`'s reply ended as `ended`: journal its outcome, or put it back to wait.
    fn ended(&mut self, id: u64, ended: Ended) {
        let Some(then) = self.running_mut(id).map(|r| r.then) else { return };
        let outcome = match (ended, then) {
            (Ended::Answered(o), _) if o.status == Status::Done => Some(o),
            (Ended::Answered(o), AfterStop::Cancel) => Some(o),
            (Ended::Failed { outcome, .. }, AfterStop::Keep) => Some(outcome),
            (Ended::Failed { .. } | Ended::Halted(_), AfterStop::Cancel) => Some(cancelled_outcome(None)),
            (Ended::Halted(reason), AfterStop::Keep) => {
                log::warn!("queue stopped at item {id}: {reason}");
                self.halted = Some(reason);
                None
            }
            // Paused, or stopped by the runtime (the app closing): it runs again from its start.
            (Ended::Answered(_) | Ended::Failed { .. } | Ended::Halted(_), AfterStop::Requeue | AfterStop::Keep) => {
                None
            }
        };
        let Some(outcome) = outcome else {
            self.set_waiting(id);
            return;
        };
        if let Err(e) = self.record(Event::Finish { id, outcome }) {
            self.halted = Some(format!("the queue's journal could not be written: {e}"));
            self.set_waiting(id);
        }
    }

    fn set_waiting(&mut self, id: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.item.id == id) {
            e.run = Run::Waiting;
        }
    }
}

/// How an item's reply ended.
enum Ended {
    /// The reply ran (to its end, or stopped: the outcome's status says).
    Answered(Outcome),
    /// The engine refused the item's input: it fails.
    Failed { outcome: Outcome },
    /// The queue cannot go on (the reason): the item waits.
    Halted(String),
}

/// One item's reply on the runtime.
struct QueueReply {
    shared: Arc<Shared>,
    item: QueueItem,
}

impl QueueReply {
    fn update(&self, change: impl FnOnce(&mut Running)) {
        if let Some(r) = lock(&self.shared.state).running_mut(self.item.id) {
            change(r);
        }
    }
}

impl ReplyHandler for QueueReply {
    fn queued(&mut self, _job: JobId, _position: usize) {}

    fn begin(&mut self, _job: JobId) -> Option<ChatTurn> {
        self.update(|r| r.started = Some(Instant::now()));
        Some(turn(&self.item))
    }

    fn progress(&mut self, _job: JobId, progress: ReplyProgress) {
        match progress {
            ReplyProgress::Prefill { done, total } => self.update(|r| r.prefill = (done, total)),
            ReplyProgress::Text { index, .. } => self.update(|r| r.tokens = index + 1),
            ReplyProgress::Figures(f) => self.update(|r| r.seconds_per_token = f.seconds_per_token),
            ReplyProgress::ToolCall(_) => {}
        }
    }

    fn end(&mut self, _job: JobId, outcome: ReplyOutcome) {
        let ended = match outcome {
            ReplyOutcome::Finished(reply) => {
                let f = &reply.figures;
                let status = if reply.finish == FinishReason::Cancelled { Status::Cancelled } else { Status::Done };
                Ended::Answered(Outcome {
                    status,
                    text: reply.text.clone(),
                    think: reply.think.clone(),
                    finish: Some(finish_name(reply.finish).into()),
                    error: None,
                    prompt_tokens: f.prompt_tokens as u32,
                    output_tokens: f.output_tokens as u32,
                    seconds: f.total.as_secs_f64(),
                    finished_at: unix_now(),
                })
            }
            ReplyOutcome::Failed { error, .. } if error.is_input_error() => Ended::Failed {
                outcome: Outcome {
                    status: Status::Failed,
                    text: String::new(),
                    think: None,
                    finish: None,
                    error: Some(error.to_string()),
                    prompt_tokens: 0,
                    output_tokens: 0,
                    seconds: 0.0,
                    finished_at: unix_now(),
                },
            },
            ReplyOutcome::Failed { error, .. } => Ended::Halted(error.to_string()),
            ReplyOutcome::Refused => Ended::Halted("the runtime refused the item".into()),
        };
        lock(&self.shared.state).ended(self.item.id, ended);
        self.shared.wake.notify_all();
    }
}

fn finish_name(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "cancelled",
        FinishReason::ContextFull => "context_full",
    }
}

/// The turn item `item` is: a new conversation of its one prompt, sampled as it was added
/// (temperature 0: greedy), decoded one token per pass.
pub fn turn(item: &QueueItem) -> ChatTurn {
    let s = &item.settings;
    let sampling = Sampling::from_user(s.temperature, s.top_p, item.seed);
    ChatTurn {
        conversation: ConversationKey::Queue,
        system: item.system.clone(),
        mode: if s.thinking { ChatMode::Thinking } else { ChatMode::Instruct },
        history: Vec::new(),
        input: TurnInput::user(item.prompt.clone()),
        params: GenerateParams {
            max_new_tokens: s.max_tokens as usize,
            sampling,
            stop_ids: Vec::new(),
            mode: DecodeMode::Incremental,
        },
        state_file: None,
    }
}
