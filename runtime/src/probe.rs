//! [`MetricsProbe`]: what the runtime is doing, readable at any time from any thread —
//! also while a reply is running.
//!
//! Owns: the model in use (or why none is), the activity (idle, opening, generating with
//! its token count, replanning with its progress), the queue length, and the live
//! streaming counters of the loaded engine (atomics the engine updates as it reads).
//! Must not: wait on the engine: the worker updates this state between steps under a
//! short lock; readers never queue behind a job.
//! Also the per-token timeline: the last [`TIMELINE_TOKENS`] tokens' [`TokenSample`]s,
//! numbered, so a dashboard asks only for the ones it has not seen.
//! Easy to break: [`MetricsProbe::wait_settled`] waits only for model opens (the
//! startup load), never for generations.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k3_engine::BatchCounters;
use k3_engine::{Counters, StreamMetrics};
use k3_io::sysinfo;
use k3_plan::MachineMemory;

use crate::error::RuntimeError;
use crate::handler::JobId;
use crate::model::ModelSummary;

/// What the worker is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum Activity {
    Idle,
    /// Opening `path`; `layers_done` of `layers_total` trunk layers pinned so far (both 0
    /// before pinning starts, and for a model with nothing to pin).
    Opening {
        path: PathBuf,
        layers_done: usize,
        layers_total: usize,
    },
    Generating {
        job: JobId,
        tokens: usize,
        elapsed: Duration,
    },
    Replanning {
        layers_done: usize,
        layers_total: usize,
    },
}

/// Tokens the timeline keeps (older ones are dropped first).
pub const TIMELINE_TOKENS: usize = 1024;

/// One generated token as the dashboards show it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenSample {
    /// 1, 2, … across the runtime's life: ask for the samples after the last one seen.
    pub seq: u64,
    pub job: JobId,
    /// Index among the reply's generated tokens; 0 includes the prompt's prefill.
    pub index: usize,
    /// Wall-clock time of this token (for index 0: prefill + the first token).
    pub wall: Duration,
    /// What streaming did for this token (`trunk_wait` + `expert_wait` ≤ `wall`: they are
    /// measured at the compute thread's wait points).
    pub metrics: StreamMetrics,
}

impl TokenSample {
    /// Wall time less the time computation waited for reads.
    pub fn compute(&self) -> Duration {
        self.wall.saturating_sub(self.metrics.io_wait())
    }
}

/// Why the last model open failed.
#[derive(Debug, Clone)]
pub struct OpenFailure {
    pub path: PathBuf,
    pub error: Arc<RuntimeError>,
}

/// One reading of the probe.
#[derive(Debug, Clone)]
pub struct ProbeSnapshot {
    pub model: Option<ModelSummary>,
    /// Why the last open failed (cleared by a successful one).
    pub model_error: Option<OpenFailure>,
    pub activity: Activity,
    /// Jobs waiting behind the current one.
    pub queued_jobs: usize,
    /// The loaded engine's streaming counters since it was loaded.
    pub stream: Option<StreamMetrics>,
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub machine: MachineMemory,
    /// Memory pressure as this system measures it (`None` where it says nothing).
    pub memory_pressure: Option<k3_io::pressure::MemoryPressure>,
    /// Pieces the reader pool is reading now (`None` without a loaded model).
    pub reads_in_flight: Option<u64>,
    /// `seq` of the newest timeline sample (0: none yet).
    pub last_token_seq: u64,
    /// Positions held by the conversation answered last (its KV cache in use).
    pub positions_in_use: usize,
    /// Expert slots holding an expert or a read (`None` without a loaded model).
    pub expert_slots_used: Option<u64>,
    /// Replies running now (more than one when they decode together; the activity shows the
    /// one started last).
    pub replies_running: usize,
    /// The engine's shared steps as of the last reply's end: steps, rows, the widest.
    pub batch: BatchCounters,
}

#[derive(Debug)]
enum Doing {
    Idle,
    Opening { path: PathBuf, layers_done: usize, layers_total: usize },
    Generating { job: JobId, tokens: usize, started: Instant },
    Replanning { layers_done: usize, layers_total: usize },
}

struct ProbeState {
    model: Option<ModelSummary>,
    model_error: Option<OpenFailure>,
    counters: Option<Arc<Counters>>,
    doing: Doing,
    queued_jobs: usize,
    opens_pending: usize,
    timeline: VecDeque<TokenSample>,
    last_seq: u64,
    positions_in_use: usize,
    replies_running: usize,
    batch: BatchCounters,
}

struct ProbeInner {
    state: Mutex<ProbeState>,
    settled: Condvar,
}

/// A cheap, cloneable view of one runtime.
#[derive(Clone)]
pub struct MetricsProbe {
    inner: Arc<ProbeInner>,
}

impl MetricsProbe {
    pub(crate) fn new() -> Self {
        let state = ProbeState {
            model: None,
            model_error: None,
            counters: None,
            doing: Doing::Idle,
            queued_jobs: 0,
            opens_pending: 0,
            timeline: VecDeque::with_capacity(TIMELINE_TOKENS),
            last_seq: 0,
            positions_in_use: 0,
            replies_running: 0,
            batch: BatchCounters::default(),
        };
        MetricsProbe { inner: Arc::new(ProbeInner { state: Mutex::new(state), settled: Condvar::new() }) }
    }

    fn lock(&self) -> MutexGuard<'_, ProbeState> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads everything now.
    pub fn snapshot(&self) -> ProbeSnapshot {
        let s = self.lock();
        let activity = match &s.doing {
            Doing::Idle => Activity::Idle,
            Doing::Opening { path, layers_done, layers_total } => {
                Activity::Opening { path: path.clone(), layers_done: *layers_done, layers_total: *layers_total }
            }
            Doing::Generating { job, tokens, started } => {
                Activity::Generating { job: *job, tokens: *tokens, elapsed: started.elapsed() }
            }
            Doing::Replanning { layers_done, layers_total } => {
                Activity::Replanning { layers_done: *layers_done, layers_total: *layers_total }
            }
        };
        let snapshot = ProbeSnapshot {
            model: s.model.clone(),
            model_error: s.model_error.clone(),
            activity,
            queued_jobs: s.queued_jobs,
            stream: s.counters.as_ref().map(|c| c.snapshot()),
            rss_bytes: None,
            peak_rss_bytes: None,
            machine: MachineMemory::new(0, 0),
            memory_pressure: None,
            reads_in_flight: s.counters.as_ref().map(|c| c.reads_in_flight()),
            last_token_seq: s.last_seq,
            positions_in_use: s.positions_in_use,
            replies_running: s.replies_running,
            batch: s.batch,
            expert_slots_used: s.counters.as_ref().map(|c| c.expert_slots_used()),
        };
        drop(s);
        ProbeSnapshot {
            rss_bytes: sysinfo::current_rss_bytes(),
            peak_rss_bytes: sysinfo::peak_rss_bytes(),
            machine: sysinfo::machine_memory(),
            memory_pressure: sysinfo::memory_pressure(),
            ..snapshot
        }
    }

    /// The timeline's samples after `seq` (oldest first; at most [`TIMELINE_TOKENS`]).
    pub fn tokens_since(&self, seq: u64) -> Vec<TokenSample> {
        let s = self.lock();
        s.timeline.iter().filter(|t| t.seq > seq).cloned().collect()
    }

    /// Waits until no model open is queued or running (the startup load among them).
    pub fn wait_settled(&self) {
        let mut s = self.lock();
        while s.opens_pending > 0 {
            s = self.inner.settled.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub(crate) fn open_queued(&self) {
        self.lock().opens_pending += 1;
    }

    pub(crate) fn opening(&self, path: PathBuf) {
        self.lock().doing = Doing::Opening { path, layers_done: 0, layers_total: 0 };
    }

    /// Trunk layers pinned so far by the open in progress.
    pub(crate) fn opening_progress(&self, done: usize, total: usize) {
        if let Doing::Opening { layers_done, layers_total, .. } = &mut self.lock().doing {
            (*layers_done, *layers_total) = (done, total);
        }
    }

    /// An open ended: `Ok` replaces the model, `Err` keeps the old one and records why.
    pub(crate) fn opened(&self, result: Result<(ModelSummary, Arc<Counters>), OpenFailure>) {
        let mut s = self.lock();
        match result {
            Ok((summary, counters)) => {
                s.model = Some(summary);
                s.counters = Some(counters);
                s.positions_in_use = 0;
                s.model_error = None;
            }
            Err(e) => s.model_error = Some(e),
        }
        s.doing = Doing::Idle;
        s.opens_pending = s.opens_pending.saturating_sub(1);
        drop(s);
        self.inner.settled.notify_all();
    }

    pub(crate) fn model_changed(&self, summary: ModelSummary) {
        self.lock().model = Some(summary);
    }

    pub(crate) fn queued(&self, delta: isize) {
        let mut s = self.lock();
        s.queued_jobs = s.queued_jobs.saturating_add_signed(delta);
    }

    /// Reply `job` started (beside the others running, which the activity no longer shows).
    pub(crate) fn reply_started(&self, job: JobId) {
        let mut s = self.lock();
        s.replies_running += 1;
        s.doing = Doing::Generating { job, tokens: 0, started: Instant::now() };
    }

    /// A reply ended, the engine's steps at `batch`; the runtime is idle once none runs.
    pub(crate) fn reply_ended(&self, batch: BatchCounters) {
        let mut s = self.lock();
        s.batch = batch;
        s.replies_running = s.replies_running.saturating_sub(1);
        if s.replies_running == 0 {
            s.doing = Doing::Idle;
        }
    }

    /// Token `index` of job `job` is out after `wall`, with `metrics` for it alone.
    pub(crate) fn generated(&self, job: JobId, index: usize, wall: Duration, metrics: StreamMetrics) {
        let mut s = self.lock();
        if let Doing::Generating { job: shown, tokens: t, .. } = &mut s.doing {
            if *shown == job {
                *t = index + 1;
            }
        }
        s.last_seq += 1;
        if s.timeline.len() == TIMELINE_TOKENS {
            s.timeline.pop_front();
        }
        let seq = s.last_seq;
        s.timeline.push_back(TokenSample { seq, job, index, wall, metrics });
    }

    /// The conversation answered last now holds `n` positions.
    pub(crate) fn positions(&self, n: usize) {
        self.lock().positions_in_use = n;
    }

    pub(crate) fn replanning(&self, layers_done: usize, layers_total: usize) {
        self.lock().doing = Doing::Replanning { layers_done, layers_total };
    }

    pub(crate) fn idle(&self) {
        self.lock().doing = Doing::Idle;
    }
}
