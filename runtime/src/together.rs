//! Replies that run together: continuous batching on the runtime's side.
//!
//! Owns: running the replies next to each other in the queue at once, each on a thread of
//! its own, up to the batch ([`run_together`]): a reply queued while others run starts as
//! soon as one of the batch's places is free, and the engine's step gate
//! (`k3_engine` `engine::gate`) puts their forward passes into shared steps. One reply from
//! start to end ([`answer`]): the handler's turn, its sink, the engine call, the outcome.
//! Must not: start a job that is not a reply while replies run (an open or a replan waits
//! until the batch has drained, and keeps its place before the replies queued after it);
//! let a reply's failure or panic reach another.
//! Easy to break: every reply's cancel token is removed before its `end`, so `cancel` is
//! false once the end is seen; the kept sessions are behind one lock, taken only to hand a
//! session out and to keep it again, never while a turn generates.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k3_engine::chat::ReplyReader;
use k3_engine::CancelToken;

use crate::chat::run_turn;
use crate::complete::run_completion;
use crate::error::RuntimeError;
use crate::handler::{ChatTurn, CompletionTurn, ReplyOutcome};
use crate::job::{Cancels, Job, ReplyJob, ReplyKind};
use crate::kept::KeptChats;
use crate::lock;
use crate::model::LoadedModel;
use crate::probe::MetricsProbe;
use crate::sink::ReplySink;

/// How often the worker looks for a newly queued reply while a batch runs: a reply waits at
/// most this long for a free place (far less than one step of a real model).
const JOIN_POLL: Duration = Duration::from_millis(5);

/// What a reply job runs once its handler handed it over.
enum Turn {
    Chat(Box<ChatTurn>),
    Completion(CompletionTurn),
}

/// What every reply of a batch shares.
pub(crate) struct Shared<'a> {
    pub model: &'a LoadedModel,
    pub kept: &'a Mutex<KeptChats>,
    pub probe: &'a MetricsProbe,
    pub cancels: &'a Cancels,
}

/// Runs `first` and the replies queued behind it together, at most `limit` at once, until
/// none runs and the next job is not a reply (it is left first in `held`) or none is queued.
pub(crate) fn run_together(
    shared: &Shared<'_>,
    first: ReplyJob,
    jobs: &Receiver<Job>,
    held: &mut VecDeque<Job>,
    limit: usize,
) {
    std::thread::scope(|scope| {
        let (ended, ends) = mpsc::channel::<()>();
        let mut running = 0usize;
        let mut next = Some(first);
        loop {
            if let Some(job) = next.take() {
                start(scope, shared, job, ended.clone());
                running += 1;
            }
            while ends.try_recv().is_ok() {
                running -= 1;
            }
            if running < limit && held.is_empty() {
                let wait = if running == 0 { Duration::ZERO } else { JOIN_POLL };
                match jobs.recv_timeout(wait) {
                    Ok(Job::Reply(job)) => next = Some(job),
                    Ok(other) => held.push_back(other),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) if running == 0 => break,
                    // A closed queue: the replies running finish first.
                    Err(RecvTimeoutError::Disconnected) => {
                        let _ = ends.recv();
                        running -= 1;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            } else if running == 0 {
                break;
            } else if ends.recv().is_ok() {
                running -= 1;
            }
        }
    });
}

/// Starts `job` on a thread of its own in `scope`; where the system gives no thread, it
/// runs on this one (it is answered, only not beside the others).
fn start<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    shared: &'scope Shared<'_>,
    job: ReplyJob,
    ended: mpsc::Sender<()>,
) {
    // The job waits in a slot the thread takes it from, so a refused thread leaves it here.
    let slot = Arc::new(Mutex::new(Some(job)));
    let taken = slot.clone();
    let ended_too = ended.clone();
    let thread = std::thread::Builder::new().name("k3-reply".into());
    let spawned = thread.spawn_scoped(scope, move || {
        if let Some(job) = lock(&taken).take() {
            answer(shared, job);
        }
        let _ = ended_too.send(());
    });
    if let Err(e) = spawned {
        log::warn!("no thread for a reply ({e}); answering it before the next one");
        if let Some(job) = lock(&slot).take() {
            answer(shared, job);
        }
        let _ = ended.send(());
    }
}

/// Answers one reply: its turn from the handler, the engine's tokens to its sink, its one end.
pub(crate) fn answer(shared: &Shared<'_>, job: ReplyJob) {
    let ReplyJob { id, kind, cancel, mut handler } = job;
    let model = shared.model;
    shared.probe.queued(-1);
    let turn = match kind {
        ReplyKind::Chat => handler.begin(id).map(|t| Turn::Chat(Box::new(t))),
        ReplyKind::Completion => handler.begin_completion(id).map(Turn::Completion),
    };
    let Some(turn) = turn else {
        lock(shared.cancels).remove(&id);
        return handler.end(id, ReplyOutcome::Refused);
    };
    shared.probe.reply_started(id);
    let weights_stream = model.engine.plan().is_some();
    let reader = match &turn {
        Turn::Chat(turn) => {
            let declared = turn.declared_tools().into_iter().map(|t| t.name).collect();
            ReplyReader::chat(&model.tokenizer, turn.mode).with_tools(declared, turn.input.call_id_prefix.clone())
        }
        Turn::Completion(_) => ReplyReader::raw(&model.tokenizer),
    };
    let mut sink = ReplySink::new(id, handler.as_mut(), shared.probe, reader, weights_stream);
    let result = match &turn {
        Turn::Chat(turn) => run_turn(model, shared.kept, turn, &cancel, &mut sink),
        Turn::Completion(turn) => completion(shared, turn, &cancel, &mut sink),
    };
    sink.finish();
    let partial = sink.partial();
    drop(sink);
    shared.probe.reply_ended(model.engine.batch_counters());
    lock(shared.cancels).remove(&id);
    let outcome = match result {
        Ok(finished) => {
            let f = &finished.figures;
            shared.probe.positions(f.prompt_tokens + f.output_tokens);
            ReplyOutcome::Finished(Box::new(finished))
        }
        Err(e) => ReplyOutcome::Failed { error: Arc::new(e), partial_text: Some(partial) },
    };
    handler.end(id, outcome);
}

/// A raw completion: a session of its own, counted among the plan's live sequences.
fn completion(
    shared: &Shared<'_>,
    turn: &CompletionTurn,
    cancel: &CancelToken,
    sink: &mut ReplySink<'_>,
) -> Result<crate::handler::FinishedReply, RuntimeError> {
    lock(shared.kept).make_room(shared.model);
    let result = run_completion(shared.model, turn, cancel, sink);
    lock(shared.kept).release();
    result
}
