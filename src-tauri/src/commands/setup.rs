//! Setup wizard commands: thin adapters over `setup::` (the flow, the saved settings, the
//! doctor, the speed test, the forecast and the long jobs).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};
use ts_rs::TS;

use crate::commands::model::join_error;
use crate::ipc::dto::ModelInfo;
use crate::ipc::error::{ErrorCode, IpcError};
use crate::setup::events::SetupEvent;
use crate::setup::facts::{examine, MachineView};
use crate::setup::flow::{advance, Blocker, Facts, SetupStep};
use crate::setup::forecast::{preset_rows, PresetRow};
use crate::setup::{awake, jobs, PatternSummary, SetupSettings, SpeedSummary};
use crate::state::AppState;

/// Whether the wizard shows, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetupStatus {
    pub settings: SetupSettings,
    pub wizard: bool,
    pub running: bool,
}

/// What a `setup_next` did: the settings after it, and what still blocks the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetupAdvance {
    pub settings: SetupSettings,
    pub blockers: Vec<Blocker>,
}

/// A choice made on a screen; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", default)]
pub struct SetupChoice {
    pub store_dir: Option<String>,
    pub trunk_dir: Option<String>,
    pub preset: Option<String>,
    /// A warning confirmed (`cpu`, `networkDrive`, `slowDrive`).
    pub confirm: Option<String>,
    /// Go back to an earlier screen.
    pub back_to: Option<SetupStep>,
}

fn status_of(state: &AppState) -> SetupStatus {
    let settings = state.setup.settings();
    SetupStatus { wizard: settings.wants_wizard(), running: state.setup.is_running(), settings }
}

#[tauri::command]
pub fn setup_status(state: State<'_, AppState>) -> SetupStatus {
    status_of(&state)
}

/// This machine's cards and drives (`store`: the folder being considered).
#[tauri::command]
pub async fn setup_examine(state: State<'_, AppState>, store: Option<String>) -> Result<MachineView, IpcError> {
    let (repo, ctx) = (state.setup.settings().repo, forecast_context(&state));
    tauri::async_runtime::spawn_blocking(move || examine(store.as_deref(), &repo, ctx).map(|(v, _)| v))
        .await
        .map_err(join_error)?
}

#[tauri::command]
pub fn setup_choose(state: State<'_, AppState>, choice: SetupChoice) -> Result<SetupSettings, IpcError> {
    if let Some(step) = choice.back_to {
        let now = state.setup.settings().step;
        if !step.can_revisit()
            || SetupStep::ALL.iter().position(|s| *s == step) > SetupStep::ALL.iter().position(|s| *s == now)
        {
            return Err(IpcError::invalid(format!("cannot go back to {step:?} from {now:?}")));
        }
    }
    state.setup.update(|s| {
        if let Some(d) = &choice.store_dir {
            s.store_dir = Some(d.clone()).filter(|d| !d.trim().is_empty());
            s.adopted = false;
        }
        if let Some(d) = &choice.trunk_dir {
            s.trunk_dir = Some(d.clone()).filter(|d| !d.trim().is_empty());
        }
        if let Some(p) = &choice.preset {
            s.preset = Some(p.clone());
        }
        if let Some(c) = &choice.confirm {
            if !s.overrides.contains(c) {
                s.overrides.push(c.clone());
            }
        }
        if let Some(step) = choice.back_to {
            s.step = step;
        }
    })
}

/// Leaves the current screen when nothing blocks it.
#[tauri::command]
pub async fn setup_next(state: State<'_, AppState>) -> Result<SetupAdvance, IpcError> {
    let settings = state.setup.settings();
    let ctx = forecast_context(&state);
    let facts = match settings.step {
        SetupStep::Hardware | SetupStep::Drives => {
            let (store, repo) = (settings.store_dir.clone(), settings.repo.clone());
            tauri::async_runtime::spawn_blocking(move || examine(store.as_deref(), &repo, ctx).map(|(_, f)| f))
                .await
                .map_err(join_error)??
        }
        SetupStep::Preset => Facts { forecast_seconds: state.setup.chosen_forecast(), ..Facts::default() },
        _ => Facts::default(),
    };
    let mut next = settings.clone();
    match advance(&mut next, &facts) {
        Ok(_) => Ok(SetupAdvance { settings: state.setup.update(|s| s.step = next.step)?, blockers: Vec::new() }),
        Err(blockers) => Ok(SetupAdvance { settings, blockers }),
    }
}

/// The drive speed test on `dir` (a scratch file, removed afterwards), with a live bar.
#[tauri::command]
pub async fn setup_speed_test(
    state: State<'_, AppState>,
    dir: String,
    on_event: Channel<SetupEvent>,
) -> Result<SpeedSummary, IpcError> {
    let seconds = state.setup.speed_seconds;
    let summary = tauri::async_runtime::spawn_blocking(move || speed_test(PathBuf::from(dir), seconds, on_event))
        .await
        .map_err(join_error)??;
    state.setup.update(|s| s.speed = Some(summary))?;
    Ok(summary)
}

fn speed_test(dir: PathBuf, seconds: f64, channel: Channel<SetupEvent>) -> Result<SpeedSummary, IpcError> {
    use k3_store::diskbench::{measure_expert_reads, ExpertReadRequest, ScratchFile};
    let io = |e: &dyn std::fmt::Display| IpcError::new(ErrorCode::Io, format!("speed test in {}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(|e| io(&e))?;
    let cancel = AtomicBool::new(false);
    let scratch = ScratchFile::create(&dir, scratch_bytes(), &cancel).map_err(|e| io(&e))?;
    let req = ExpertReadRequest::new(vec![scratch.path().to_path_buf()], seconds);
    let report = measure_expert_reads(
        &req,
        &mut |p| {
            let bytes_read = p.reads * k3_store::diskbench::EXPERT_BLOCK_BYTES as u64;
            let _ = channel.send(SetupEvent::SpeedTest {
                depth: p.depth as u32,
                bytes_read,
                mb_per_s: p.mb_per_s,
                fraction: p.fraction(),
            });
        },
        &cancel,
    )
    .map_err(|e| io(&e))?;
    let pass = |depth: usize| report.at_depth(depth).cloned();
    let (q1, q16) = (pass(1).ok_or_else(|| io(&"no depth-1 pass"))?, pass(16).ok_or_else(|| io(&"no depth-16 pass"))?);
    let _ = channel.send(SetupEvent::SpeedTest { depth: 0, bytes_read: 0, mb_per_s: 0.0, fraction: 1.0 });
    let read_pattern = best_pattern(scratch.path(), scratch_bytes()).map_err(|e| io(&e))?;
    Ok(SpeedSummary {
        qd1_mb_per_s: q1.mb_per_s,
        qd16_mb_per_s: q16.mb_per_s,
        qd1_experts_per_s: q1.experts_per_s,
        qd16_experts_per_s: q16.experts_per_s,
        direct: report.direct,
        read_pattern,
    })
}

/// The drive's best read pattern on the scratch file: the benchmarks' floor grid (8 and 32
/// MiB × 8 and 32 in flight, random and sequential), at most 128 MB a point, so the engine
/// reads the way this drive wants (issue 12). `None` when the file is too small to sweep.
fn best_pattern(file: &std::path::Path, file_bytes: u64) -> k3_engine::Result<Option<PatternSummary>> {
    use k3_store::diskbench::{floor_grid, sweep, SweepRequest};
    let req =
        SweepRequest { files: vec![file.to_path_buf()], bytes_per_point: file_bytes.min(128_000_000), ..floor_grid() };
    Ok(sweep(&req)?.best().map(|p| PatternSummary {
        request_bytes: p.request_bytes as u32,
        depth: p.depth as u32,
        mb_per_s: p.gbps * 1000.0,
    }))
}

/// The speed test's scratch file: 2 GiB, or `K3APP_SPEED_SCRATCH_MB` (tests use less).
fn scratch_bytes() -> u64 {
    std::env::var("K3APP_SPEED_SCRATCH_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|m| (64..=65536).contains(m))
        .map_or(2 << 30, |m| m << 20)
}

/// The context the wizard's plans and forecasts are shown at: the one set, else the
/// planner's base context (each preset's row also shows the default context it would open
/// at, `k3_plan::default_context`).
fn forecast_context(state: &AppState) -> usize {
    state.context_length().unwrap_or(k3_engine::DEFAULT_CONTEXT_LENGTH)
}

/// Each preset's plan and forecast at the speed test's figures.
#[tauri::command]
pub async fn setup_forecast(state: State<'_, AppState>) -> Result<Vec<PresetRow>, IpcError> {
    let speed = state.setup.settings().speed.ok_or_else(|| IpcError::invalid("run the speed test first"))?;
    let ctx = forecast_context(&state);
    let rows = tauri::async_runtime::spawn_blocking(move || preset_rows(&speed, ctx)).await.map_err(join_error)??;
    state.setup.remember_forecast(rows.clone());
    Ok(rows)
}

/// Runs the download, pack and first load from the saved step; `null` when paused. The
/// machine is kept awake meanwhile, and a desktop notification tells how it ended.
#[tauri::command]
pub async fn setup_run<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    on_event: Channel<SetupEvent>,
) -> Result<Option<ModelInfo>, IpcError> {
    let stop = state.setup.begin_job()?;
    let emit: jobs::Emit = Arc::new(move |e| {
        let _ = on_event.send(e);
    });
    let (awake, held) = tauri::async_runtime::spawn_blocking(|| awake::hold("Downloading and preparing Kimi K3"))
        .await
        .map_err(join_error)?;
    emit(SetupEvent::Awake { held: held.is_ok(), detail: held.err() });
    let result = jobs::run(state.setup.clone(), state.worker.clone(), emit.clone(), stop, state.context_length()).await;
    state.setup.end_job();
    let _ = tauri::async_runtime::spawn_blocking(move || drop(awake)).await;
    match &result {
        Ok(Some(model)) => tell(&app, "Kimi K3 is ready", &format!("{} is loaded: the chat is yours.", model.name)),
        Ok(None) => log::info!("setup paused at {:?}", state.setup.settings().step),
        Err(e) => {
            log::warn!("setup stopped at {:?}: {}", state.setup.settings().step, e.message);
            emit(SetupEvent::Failed { error: e.clone() });
            tell(&app, "Kimi K3 setup stopped", &e.message);
        }
    }
    result
}

/// A desktop notification; a desktop without a notification service only loses the toast.
fn tell<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    if let Err(e) = awake::notify(app, title, body) {
        log::warn!("notification not shown ({e}): {title}");
    }
}

/// Saves a Hugging Face token where the hub client reads it (`$HF_HOME/token`), for the
/// access-denied screen; the next `setup_run` uses it.
#[tauri::command]
pub fn setup_token(token: String) -> Result<(), IpcError> {
    crate::setup::problem::save_token(&k3_store::HubSettings::from_env().token_path, &token)
}

/// Pauses the running job; everything durable is kept.
#[tauri::command]
pub fn setup_pause(state: State<'_, AppState>) -> bool {
    state.setup.pause()
}

/// "I already have the files": the folder becomes the store, and the download step hashes
/// what is there in place, fetching only what is missing or wrong.
#[tauri::command]
pub fn setup_adopt(state: State<'_, AppState>, path: String) -> Result<SetupSettings, IpcError> {
    if !std::path::Path::new(&path).is_dir() {
        return Err(IpcError::new(ErrorCode::ModelFolder, format!("{path}: not a folder")));
    }
    state.setup.update(|s| {
        s.store_dir = Some(path.clone());
        s.adopted = true;
        s.preset = s.preset.clone().or(Some("auto".into()));
        s.step = SetupStep::Download;
    })
}

/// "Try the demo model" (or reopening the wizard later with `false`).
#[tauri::command]
pub fn setup_dismiss(state: State<'_, AppState>, dismissed: bool) -> Result<SetupStatus, IpcError> {
    state.setup.update(|s| s.dismissed = dismissed)?;
    Ok(status_of(&state))
}
