//! Settings › Performance (thread counts, applied by reopening the model; speculative
//! decoding, applied from the next reply) and the log
//! viewer of Settings › Diagnostics: thin adapters over [`k3_app::performance`] and
//! [`k3_app::log_tail`].

use tauri::State;

use k3_io::ReadPattern;

use crate::commands::model::join_error;
use crate::ipc::dto::ModelInfo;
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::logging::LogTail;
use crate::ipc::performance::{PerformanceView, SpeculationChoice, Threads};
use crate::ipc::saved_states::ResumeChoice;
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;
use k3_app::performance::{self as core, cores, ThreadsInUse, DEFAULT_IO_THREADS, MAX_IO_THREADS};
use k3_app::saved_states;
use k3_app::worker::ModelTarget;

/// What Settings › Performance shows: the saved counts, the environment's, the model's.
#[tauri::command]
pub fn performance_settings(state: State<'_, AppState>) -> PerformanceView {
    let model = state.worker.probe().snapshot().model;
    core::PerformanceView {
        saved: core::Threads::load(&state.settings),
        from_env: state.env_threads,
        cores: cores(),
        default_io: DEFAULT_IO_THREADS,
        max_io: MAX_IO_THREADS,
        in_use: model.as_ref().map(|m| ThreadsInUse {
            compute: m.compute_threads as u32,
            io: m.io_threads as u32,
            read_request_bytes: m.read_pattern.request_bytes as u32,
            read_depth: m.read_pattern.depth as u32,
        }),
        speed: state.setup.settings().speed,
        speed_test_dir: model.filter(|m| !m.is_demo).map(|m| m.path.display().to_string()),
        speculation: core::SpeculationChoice::load(&state.settings),
        max_draft: k3_engine::speculate::MAX_DRAFT as u32,
        resume: saved_states::ResumeChoice::load(&state.settings),
        max_keep: saved_states::MAX_KEEP,
        saved_states: saved_states::usage(&state.data_dir),
    }
    .to_wire()
}

/// Saves how many conversations keep their engine state; the oldest beyond it go now.
#[tauri::command]
pub fn set_resume(state: State<'_, AppState>, choice: ResumeChoice) -> Result<(), IpcError> {
    let choice = saved_states::ResumeChoice::from_wire(choice);
    choice.check()?;
    choice.save(&state.settings)?;
    saved_states::prune(&state.data_dir, choice.keep, None)?;
    log::info!("saved conversation states: keep {}", choice.keep);
    Ok(())
}

/// Saves the speculative decoding choice; the next reply decodes with it (no reopen).
#[tauri::command]
pub fn set_speculation(state: State<'_, AppState>, choice: SpeculationChoice) -> Result<(), IpcError> {
    let choice = core::SpeculationChoice::from_wire(choice);
    choice.check()?;
    choice.save(&state.settings)?;
    log::info!("speculative decoding: up to {} draft tokens (0 = off)", choice.max_draft);
    Ok(())
}

/// Saves `threads` and reopens the model with them (after the reply in progress, like any
/// open), reading with the last speed test's pattern; the old model stays on failure.
#[tauri::command]
pub async fn apply_performance(state: State<'_, AppState>, threads: Threads) -> Result<ModelInfo, IpcError> {
    let threads = core::Threads::from_wire(threads);
    threads.check(cores())?;
    threads.save(&state.settings)?;
    let used = threads.or(state.env_threads);
    let memory = state.memory();
    let measured = state.setup.settings().speed.map_or(ReadPattern::DEFAULT, |s| s.engine_pattern());
    log::info!(
        "performance: compute threads {}, I/O threads {}; reopening the model",
        used.compute.map_or("all".to_string(), |n| n.to_string()),
        used.io_threads()
    );
    let worker = state.worker.clone();
    let reopen = move || {
        worker.reopen(used, |t| {
            let read_pattern = if t.is_demo { t.read_pattern } else { measured };
            ModelTarget { read_pattern, ..memory.applied_to(t) }
        })
    };
    let opened = tauri::async_runtime::spawn_blocking(reopen).await.map_err(join_error)?;
    Ok(opened?.to_wire())
}

/// The log viewer: the last `lines` entries of the app's log (at most 2,000).
#[tauri::command]
pub async fn read_log(state: State<'_, AppState>, lines: u32) -> Result<LogTail, IpcError> {
    let Some(path) = state.log_file.clone() else {
        return Err(IpcError::new(ErrorCode::Io, "this platform has no log folder"));
    };
    let max = lines.clamp(1, 2000) as usize;
    tauri::async_runtime::spawn_blocking(move || {
        k3_app::log_tail::read_tail(&path, max)
            .map(ToWire::to_wire)
            .map_err(|e| IpcError::new(ErrorCode::Io, format!("reading {}: {e}", path.display())))
    })
    .await
    .map_err(join_error)?
}
