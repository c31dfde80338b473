//! The wizard's long jobs, run from the saved step onward: k3-store's install pipeline
//! step by step (the download, its events batched to ≤ 10 a second; the trunk pack,
//! resumed at its last layer and skipped when current), and the
//! first load through the app's one runtime; each step saved as it completes, so a quit or
//! crash resumes where it stopped.
//!
//! Owns: [`run`]. Must not: mark a step done before its job returned success.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k3_engine::TrunkPack;
use k3_store::{DownloadOptions, HubClient, HubSettings, Install, StoreError};
use tokio_util::sync::CancellationToken;

use super::events::{Batch, SetupEvent};
use super::flow::SetupStep;
use super::host::SetupHost;
use super::problem::problem_of;
use crate::error::{AppError, ErrorKind};
use crate::worker::ModelInfo;
use crate::worker::{ModelTarget, Worker};

/// The window's end of the job: every event, in order.
pub type Emit = Arc<dyn Fn(SetupEvent) + Send + Sync>;

/// How often batched download events reach the window.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Runs the jobs from the saved step to Ready; `Ok(None)` when paused.
pub async fn run(
    host: Arc<SetupHost>,
    worker: Arc<Worker>,
    emit: Emit,
    stop: CancellationToken,
    context_length: Option<usize>,
) -> Result<Option<ModelInfo>, AppError> {
    loop {
        let settings = host.settings();
        let store = settings
            .store_dir
            .clone()
            .map(PathBuf::from)
            .ok_or_else(|| AppError::invalid("no model store is chosen"))?;
        let trunk = settings.trunk_path().ok_or_else(|| AppError::invalid("no trunk folder"))?;
        match settings.step {
            SetupStep::Download => {
                if !download(&install(&settings.repo, &store, &trunk), emit.clone(), stop.clone()).await? {
                    emit(SetupEvent::Stopped);
                    return Ok(None);
                }
            }
            SetupStep::Pack => {
                let (i, e) = (install(&settings.repo, &store, &trunk), emit.clone());
                tokio::task::spawn_blocking(move || pack(&i, &e)).await.map_err(join_error)??;
            }
            SetupStep::FirstLoad => {
                let preset = settings
                    .preset
                    .as_deref()
                    .and_then(|p| k3_plan::Preset::from_name(p).ok())
                    .unwrap_or(k3_plan::Preset::Auto);
                let read_pattern = settings.speed.map_or(k3_io::ReadPattern::DEFAULT, |s| s.engine_pattern());
                let target = ModelTarget {
                    trunk: Some(trunk),
                    budget: preset.choice(),
                    context_length,
                    read_pattern,
                    ..ModelTarget::folder(store, false)
                };
                let model = first_load(&worker, target, &emit).await?;
                let done = host.update(|s| s.step = SetupStep::Ready)?;
                emit(SetupEvent::Step { step: done.step });
                emit(SetupEvent::Ready { model: model.clone() });
                return Ok(Some(model));
            }
            SetupStep::Ready => return Ok(None),
            SetupStep::Welcome | SetupStep::Hardware | SetupStep::Drives | SetupStep::SpeedTest | SetupStep::Preset => {
                return Err(AppError::invalid(format!("the setup is at {:?}, not at a job", settings.step)));
            }
        }
        let next = host.update(|s| s.step = s.step.next())?;
        log::info!("setup: {:?} done", settings.step);
        emit(SetupEvent::Step { step: next.step });
    }
}

/// Opens the model through the one runtime, telling the window every 100 ms how many trunk
/// layers are pinned and the resident set so far.
async fn first_load(worker: &Arc<Worker>, target: ModelTarget, emit: &Emit) -> Result<ModelInfo, AppError> {
    let w = worker.clone();
    let mut open = tokio::task::spawn_blocking(move || w.open_model(target));
    let (probe, start) = (worker.probe(), Instant::now());
    loop {
        tokio::select! {
            done = &mut open => return done.map_err(join_error)?,
            _ = tokio::time::sleep(FLUSH_EVERY) => {
                let now = probe.snapshot();
                let (layers_done, layers_total) = match now.activity {
                    k3_runtime::Activity::Opening { layers_done, layers_total, .. } => (layers_done, layers_total),
                    k3_runtime::Activity::Idle
                    | k3_runtime::Activity::Generating { .. }
                    | k3_runtime::Activity::Replanning { .. } => (0, 0),
                };
                emit(SetupEvent::FirstLoad {
                    layers_done: layers_done as u32,
                    layers_total: layers_total as u32,
                    rss_bytes: now.rss_bytes,
                    seconds: start.elapsed().as_secs_f64(),
                });
            }
        }
    }
}

/// The store's install pipeline for the chosen repository, store and trunk folders.
fn install(repo: &str, store: &std::path::Path, trunk: &std::path::Path) -> Install {
    let revision = HubSettings::from_env().revision_override.unwrap_or_else(|| "main".into());
    let mut opts = DownloadOptions::new(repo, &revision, store.to_path_buf());
    opts.trunk_dir = Some(trunk.to_path_buf());
    Install::new(opts)
}

/// The download with its events batched; `Ok(false)` when stopped.
async fn download(install: &Install, emit: Emit, stop: CancellationToken) -> Result<bool, AppError> {
    let store = install.store();
    std::fs::create_dir_all(store).map_err(|e| AppError::new(ErrorKind::Io, format!("{}: {e}", store.display())))?;
    let hub = HubClient::new(HubSettings::from_env()).map_err(store_error)?;
    let batch = Arc::new(Mutex::new(Batch::default()));
    let sink_batch = batch.clone();
    let sink: k3_store::download::EventSink = Arc::new(move |e| {
        if let Ok(mut b) = sink_batch.lock() {
            b.push(e);
        }
    });
    let flushing = CancellationToken::new();
    let flusher = tokio::spawn(flush_loop(batch.clone(), emit.clone(), flushing.clone()));
    let result = install.download(hub, sink, stop).await;
    flushing.cancel();
    let _ = flusher.await;
    match result {
        Ok(_) => Ok(true),
        Err(StoreError::Stopped) => Ok(false),
        Err(e) => {
            if let Some(problem) = problem_of(&e, std::env::var_os("HF_TOKEN").is_some_and(|t| !t.is_empty())) {
                emit(SetupEvent::Problem { problem });
            }
            Err(store_error(e))
        }
    }
}

async fn flush_loop(batch: Arc<Mutex<Batch>>, emit: Emit, done: CancellationToken) {
    loop {
        let last = tokio::select! {
            _ = done.cancelled() => true,
            _ = tokio::time::sleep(FLUSH_EVERY) => false,
        };
        let events = batch.lock().map(|mut b| b.take()).unwrap_or_default();
        for e in events {
            emit(e);
        }
        if last {
            return;
        }
    }
}

fn pack(install: &Install, emit: &Emit) -> Result<(), AppError> {
    install
        .pack(&TrunkPack, &mut |p| {
            emit(SetupEvent::Pack {
                layer: p.layer as u32,
                layers: p.layers as u32,
                bytes_done: p.bytes_done,
                bytes_total: p.bytes_total,
                mb_per_s: p.mb_per_s,
            })
        })
        .map(|_| ())
        .map_err(|e| AppError::from(&e))
}

pub fn store_error(e: StoreError) -> AppError {
    let code = if e.is_input_error() { ErrorKind::InvalidArgument } else { ErrorKind::Download };
    AppError::new(code, e.to_string())
}

fn join_error(e: impl std::fmt::Display) -> AppError {
    AppError::internal(format!("background task failed: {e}"))
}
