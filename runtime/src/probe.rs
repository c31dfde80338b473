//! [`MetricsProbe`]: what the runtime is doing, readable at any time from any thread —
//! also while a reply is running.
//!
//! Owns: the model in use (or why none is), the activity (idle, opening, generating with
//! its token count, replanning with its progress), the queue length, and the live
//! streaming counters of the loaded engine (atomics the engine updates as it reads).
//! Must not: wait on the engine: the worker updates this state between steps under a
//! short lock; readers never queue behind a job.
//! Easy to break: [`MetricsProbe::wait_settled`] waits only for model opens (the
//! startup load), never for generations.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k3_engine::io::sysinfo;
use k3_engine::stream::{Counters, StreamMetrics};
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
        };
        drop(s);
        ProbeSnapshot {
            rss_bytes: sysinfo::current_rss_bytes(),
            peak_rss_bytes: sysinfo::peak_rss_bytes(),
            machine: sysinfo::machine_memory(),
            ..snapshot
        }
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

    pub(crate) fn queued(&self, delta: isize) -> usize {
        let mut s = self.lock();
        let before = s.queued_jobs;
        s.queued_jobs = before.saturating_add_signed(delta);
        before
    }

    pub(crate) fn generating(&self, job: JobId) {
        self.lock().doing = Doing::Generating { job, tokens: 0, started: Instant::now() };
    }

    pub(crate) fn generated(&self, tokens: usize) {
        if let Doing::Generating { tokens: t, .. } = &mut self.lock().doing {
            *t = tokens;
        }
    }

    pub(crate) fn replanning(&self, layers_done: usize, layers_total: usize) {
        self.lock().doing = Doing::Replanning { layers_done, layers_total };
    }

    pub(crate) fn idle(&self) {
        self.lock().doing = Doing::Idle;
    }
}
