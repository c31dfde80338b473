//! Continuous batching: generations running on several threads share forward passes.
//!
//! Owns: [`StepGate`], through which every generation's forward pass goes. Each generation
//! inside the engine is a member ([`StepGate::join`]); a member hands its sequence state and
//! the tokens it needs fed to the gate as a ticket, and the step runs once every member has
//! arrived (or the first arrival waited [`ASSEMBLE_WAIT`] for the rest): one member (the leader) takes the waiting tickets — single decode rows first,
//! then prompt chunks in what room is left, [`Engine::prefill_chunk`] rows in all — runs them
//! through one [`crate::model::Model::forward_batch`], and hands each state back with its
//! logits. Members join and leave between steps; a member whose cancel token fires leaves at
//! once, even from a running step (its share is dropped, its session rebuilt from its tokens
//! on its next pass), and a step all of whose members left stops at the next layer.
//! Must not: change a number: a sequence's logits are those it gets alone (the batched pass
//! works row by row except inside each sequence's own attention), whatever the batch, the
//! rows each step gives it or the arrival order.
//! Easy to break: a member that stays away from the gate (blocked in its sink) costs each
//! step [`ASSEMBLE_WAIT`], never a stall; a member must leave (drop its [`Member`]) when
//! its generation ends. A panic inside a step (the engine has no panicking path) frees the
//! gate and stops the step's members (`Unwinding`). The draft pass of speculative decoding runs
//! outside the batch but only while no step runs ([`StepGate::exclusive`]).

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Engine;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::model::{LogitsFor, SequenceInput, SequenceState};

/// How often a waiting member looks at its cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// How long the members that arrived wait for the others before a step runs without them:
/// a member held up outside the gate (its sink, its constraint) joins the next step instead
/// of stalling this one. Small beside a step of a real model (seconds).
const ASSEMBLE_WAIT: Duration = Duration::from_millis(10);

/// The meeting point of the generations running at once (one per engine).
#[derive(Default)]
pub(crate) struct StepGate {
    inner: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    /// Generations inside the engine (each holds a [`Member`]).
    members: usize,
    /// Tickets handed in and not yet taken by a step.
    waiting: Vec<Ticket>,
    /// The step running now: its tickets' ids and the token that stops it.
    running: Option<(Vec<u64>, CancelToken)>,
    /// Tickets of the running step whose members left.
    abandoned: HashSet<u64>,
    /// What finished steps gave each ticket, until its member takes it.
    done: Vec<(u64, Outcome)>,
    next_ticket: u64,
    /// When the last step ended: members coming back from it are waited for from then.
    last_step_end: Option<Instant>,
    /// Steps run, rows they carried and the most sequences one carried, for the dashboards.
    steps: u64,
    rows: u64,
    widest: usize,
}

impl Gate {
    /// Whether a step runs now: none runs, and every member arrived or the first arrival
    /// waited [`ASSEMBLE_WAIT`]; else how long to wait at most.
    fn ready(&self, now: Instant) -> Ready {
        if self.running.is_some() || self.waiting.is_empty() {
            return Ready::WaitAtMost(CANCEL_POLL);
        }
        if self.waiting.len() >= self.members {
            return Ready::Now;
        }
        let first = self.waiting.iter().map(|t| t.arrived).min().unwrap_or(now);
        let since = self.last_step_end.map_or(first, |end| end.max(first));
        match ASSEMBLE_WAIT.checked_sub(now.saturating_duration_since(since)) {
            Some(left) if !left.is_zero() => Ready::WaitAtMost(left.min(CANCEL_POLL)),
            _ => Ready::Now,
        }
    }
}

/// [`Gate::ready`]'s answer.
enum Ready {
    Now,
    WaitAtMost(Duration),
}

/// One member's share of the next step.
struct Ticket {
    id: u64,
    state: SequenceState,
    tokens: Vec<u32>,
    cancel: CancelToken,
    arrived: Instant,
}

/// What a step gave one ticket.
enum Outcome {
    /// `fed` tokens went into `state`; `logits` are the last one's when it was the ticket's last.
    Fed {
        state: SequenceState,
        fed: usize,
        logits: Option<Vec<f32>>,
    },
    /// The step stopped or failed: `state` is reset, to be rebuilt from its tokens.
    Stopped {
        state: SequenceState,
    },
    Failed {
        state: SequenceState,
        error: Arc<Error>,
    },
}

/// A generation's membership: while it is held, steps wait for this generation.
pub(crate) struct Member<'a> {
    gate: &'a StepGate,
}

impl Drop for Member<'_> {
    fn drop(&mut self) {
        self.gate.lock().members -= 1;
        self.gate.changed.notify_all();
    }
}

/// What one call of [`StepGate::feed`] did.
pub(crate) enum Fed {
    /// `fed` of the tokens went in; `logits` are the last token's when all of them did.
    Progress { fed: usize, logits: Option<Vec<f32>> },
    /// The member's cancel token fired; its state was reset.
    Cancelled,
}

/// Steps and rows the gate ran since the engine was loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchCounters {
    /// Generations inside the engine now.
    pub members: usize,
    pub steps: u64,
    pub rows: u64,
    /// The most sequences one step carried.
    pub widest: usize,
}

impl StepGate {
    fn lock(&self) -> MutexGuard<'_, Gate> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Joins the batch for one generation.
    pub(crate) fn join(&self) -> Member<'_> {
        self.lock().members += 1;
        Member { gate: self }
    }

    /// What the gate has done so far.
    pub(crate) fn counters(&self) -> BatchCounters {
        let g = self.lock();
        BatchCounters { members: g.members, steps: g.steps, rows: g.rows, widest: g.widest }
    }

    /// Runs `work` (a member's pass outside the batch) while no step runs.
    pub(crate) fn exclusive<T>(&self, cancel: &CancelToken, work: impl FnOnce() -> T) -> T {
        let mut g = self.lock();
        while g.running.is_some() {
            g = self.wait(g, CANCEL_POLL);
        }
        g.running = Some((Vec::new(), cancel.clone()));
        drop(g);
        let out = work();
        self.lock().running = None;
        self.changed.notify_all();
        out
    }

    fn wait<'g>(&self, g: MutexGuard<'g, Gate>, at_most: Duration) -> MutexGuard<'g, Gate> {
        match self.changed.wait_timeout(g, at_most) {
            Ok((g, _)) => g,
            Err(poisoned) => poisoned.into_inner().0,
        }
    }
}

impl Engine {
    /// Feeds `tokens` into `state` through the gate, one step at a time (a step may take
    /// only some of them: the rest go in later steps). Returns the last token's logits, or
    /// `None` when `cancel` fired (the state is then reset). `progress(done)` hears the
    /// tokens fed so far after each step of a feed that takes more than one.
    pub(super) fn feed_gated(
        &self,
        state: &mut SequenceState,
        tokens: &[u32],
        cancel: &CancelToken,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Option<Vec<f32>>> {
        let (mut done, mut steps) = (0, 0);
        while done < tokens.len() {
            match self.step_through_gate(state, &tokens[done..], cancel)? {
                Fed::Cancelled => return Ok(None),
                Fed::Progress { fed, logits } => {
                    done += fed;
                    steps += 1;
                    // A feed of one step is not progress; each step of a longer one is.
                    if steps > 1 || done < tokens.len() {
                        progress(done);
                    }
                    if done == tokens.len() {
                        return Ok(logits);
                    }
                }
            }
        }
        Err(Error::Empty { what: "tokens to feed" })
    }

    /// Hands `state` and `tokens` to the next step and waits for what it gave them.
    fn step_through_gate(&self, state: &mut SequenceState, tokens: &[u32], cancel: &CancelToken) -> Result<Fed> {
        let gate = &self.gate;
        let mut g = gate.lock();
        let id = g.next_ticket;
        g.next_ticket += 1;
        let held = std::mem::replace(state, SequenceState::detached());
        g.waiting.push(Ticket {
            id,
            state: held,
            tokens: tokens.to_vec(),
            cancel: cancel.clone(),
            arrived: Instant::now(),
        });
        gate.changed.notify_all();
        loop {
            if let Some(i) = g.done.iter().position(|(t, _)| *t == id) {
                let (_, outcome) = g.done.swap_remove(i);
                return match outcome {
                    Outcome::Fed { state: s, fed, logits } => {
                        *state = s;
                        Ok(Fed::Progress { fed, logits })
                    }
                    Outcome::Stopped { state: s } => {
                        *state = s;
                        Ok(Fed::Cancelled)
                    }
                    Outcome::Failed { state: s, error } => {
                        *state = s;
                        // A step of this sequence alone fails with the pass's own error.
                        Err(Arc::try_unwrap(error).unwrap_or_else(|shared| Error::Batch { source: shared }))
                    }
                };
            }
            if cancel.is_cancelled() {
                return Ok(self.leave(g, id, state));
            }
            match g.ready(Instant::now()) {
                Ready::Now => g = self.lead(g),
                Ready::WaitAtMost(at_most) => g = gate.wait(g, at_most),
            }
        }
    }

    /// A cancelled member leaves: its ticket back if no step took it, else dropped from
    /// the running step (stopping the step when every member of it left).
    fn leave(&self, mut g: MutexGuard<'_, Gate>, id: u64, state: &mut SequenceState) -> Fed {
        if let Some(i) = g.waiting.iter().position(|t| t.id == id) {
            let mut ticket = g.waiting.swap_remove(i);
            ticket.state.reset();
            *state = ticket.state;
        } else {
            g.abandoned.insert(id);
            // (An exclusive pass has no tickets and is never stopped from here.)
            if let Some((ids, stop)) = &g.running {
                if !ids.is_empty() && ids.iter().all(|t| g.abandoned.contains(t)) {
                    stop.cancel();
                }
            }
            *state = SequenceState::new(self.config(), self.context_length());
        }
        self.gate.changed.notify_all();
        Fed::Cancelled
    }

    /// Runs one step over the waiting tickets (the caller holds the lock, and gets it back).
    fn lead<'g>(&'g self, mut g: MutexGuard<'g, Gate>) -> MutexGuard<'g, Gate> {
        let mut tickets = std::mem::take(&mut g.waiting);
        // Single decode rows first, then prompts by length, in the rows a step may carry.
        tickets.sort_by_key(|t| (t.tokens.len(), t.id));
        let mut room = self.prefill_chunk();
        let mut taken = Vec::new();
        for mut ticket in tickets {
            let rows = ticket.tokens.len().min(room);
            if rows == 0 || ticket.cancel.is_cancelled() {
                g.waiting.push(ticket);
                continue;
            }
            room -= rows;
            let complete = rows == ticket.tokens.len();
            ticket.tokens.truncate(rows);
            taken.push(Taken { ticket, rows, complete });
        }
        // One sequence alone stops on its own token, as a generation without company does.
        let stop = match taken.as_slice() {
            [only] => only.ticket.cancel.clone(),
            _ => CancelToken::new(),
        };
        g.running = Some((taken.iter().map(|t| t.ticket.id).collect(), stop.clone()));
        g.steps += 1;
        g.rows += taken.iter().map(|t| t.rows as u64).sum::<u64>();
        g.widest = g.widest.max(taken.len());
        drop(g);
        let mut unwinding = Unwinding { engine: self, ids: taken.iter().map(|t| t.ticket.id).collect() };
        let results = self.run_step(&mut taken, &stop);
        unwinding.ids.clear();
        let mut g = self.gate.lock();
        g.running = None;
        g.last_step_end = Some(Instant::now());
        for (t, result) in taken.into_iter().zip(results) {
            if g.abandoned.remove(&t.ticket.id) {
                continue;
            }
            g.done.push((t.ticket.id, result.finish(t.ticket.state, t.rows)));
        }
        self.gate.changed.notify_all();
        g
    }

    /// The forward pass of one step: each ticket's tokens, with the last one's logits for
    /// the tickets whose tokens all fit (`complete`).
    fn run_step(&self, taken: &mut [Taken], stop: &CancelToken) -> Vec<StepResult> {
        let mut inputs: Vec<SequenceInput<'_>> = taken
            .iter_mut()
            .map(|t| SequenceInput {
                tokens: &t.ticket.tokens,
                state: &mut t.ticket.state,
                want: if t.complete { LogitsFor::Last } else { LogitsFor::None },
            })
            .collect();
        let out = self.pool.install(|| self.model.forward_batch(&mut inputs, stop, None));
        drop(inputs);
        match out {
            Ok(Some(logits)) => {
                logits.into_iter().zip(taken.iter()).map(|(l, t)| StepResult::Logits(t.complete.then_some(l))).collect()
            }
            Ok(None) => taken.iter().map(|_| StepResult::Stopped).collect(),
            Err(e) => {
                let e = Arc::new(e);
                taken.iter().map(|_| StepResult::Failed(e.clone())).collect()
            }
        }
    }
}

/// Armed while a step runs: should the pass panic, the gate is freed and each of the step's
/// members told its pass stopped (its session is rebuilt from its tokens), so none waits on.
struct Unwinding<'a> {
    engine: &'a Engine,
    ids: Vec<u64>,
}

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        // Disarmed (the step returned): nothing to do.
        if self.ids.is_empty() {
            return;
        }
        let fresh = || SequenceState::new(self.engine.config(), self.engine.context_length());
        let mut g = self.engine.gate.lock();
        g.running = None;
        for &id in &self.ids {
            if !g.abandoned.remove(&id) {
                g.done.push((id, Outcome::Stopped { state: fresh() }));
            }
        }
        self.engine.gate.changed.notify_all();
    }
}

/// A ticket a step took: `rows` of its tokens (the rest wait), `complete` when that is all.
struct Taken {
    ticket: Ticket,
    rows: usize,
    complete: bool,
}

/// One ticket's share of a step's result.
enum StepResult {
    Logits(Option<Vec<f32>>),
    Stopped,
    Failed(Arc<Error>),
}

impl StepResult {
    fn finish(self, mut state: SequenceState, fed: usize) -> Outcome {
        match self {
            StepResult::Logits(logits) => Outcome::Fed { state, fed, logits },
            StepResult::Stopped => {
                state.reset();
                Outcome::Stopped { state }
            }
            StepResult::Failed(error) => {
                state.reset();
                Outcome::Failed { state, error }
            }
        }
    }
}
