//! Setup wizard commands: thin adapters over `setup::` (the flow, the saved settings, the
//! doctor, the speed test, the forecast and the long jobs).

use std::path::PathBuf;
use std::sync::Arc;

use k3_app::setup::events::SetupEvent as CoreEvent;
use k3_app::setup::facts::examine;
use k3_app::setup::flow::{advance, Facts, SetupStep};
use k3_app::setup::forecast::preset_rows;
use k3_app::setup::jobs;
use k3_app::setup::speed::speed_test;
use tauri::ipc::Channel;
use tauri::{AppHandle, Runtime, State};

use crate::awake;
use crate::commands::model::join_error;
use crate::ipc::dto::ModelInfo;
use crate::ipc::error::{ErrorCode, IpcError};
use crate::ipc::setup::{
    MachineView, PresetRow, SetupAdvance, SetupChoice, SetupEvent, SetupSettings, SetupStatus, SpeedSummary,
};
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;

fn status_of(state: &AppState) -> SetupStatus {
    let settings = state.setup.settings();
    SetupStatus { wizard: settings.wants_wizard(), running: state.setup.is_running(), settings: settings.to_wire() }
}

#[tauri::command]
pub fn setup_status(state: State<'_, AppState>) -> SetupStatus {
    status_of(&state)
}

/// This machine's cards and drives (`store`: the folder being considered).
#[tauri::command]
pub async fn setup_examine(state: State<'_, AppState>, store: Option<String>) -> Result<MachineView, IpcError> {
    let (repo, ctx) = (state.setup.settings().repo, forecast_context(&state));
    tauri::async_runtime::spawn_blocking(move || examine(store.as_deref(), &repo, ctx).map(|(v, _)| v.to_wire()))
        .await
        .map_err(join_error)?
        .map_err(IpcError::from)
}

#[tauri::command]
pub fn setup_choose(state: State<'_, AppState>, choice: SetupChoice) -> Result<SetupSettings, IpcError> {
    Ok(state.setup.choose(FromWire::from_wire(choice))?.to_wire())
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
        Ok(_) => {
            Ok(SetupAdvance { settings: state.setup.update(|s| s.step = next.step)?.to_wire(), blockers: Vec::new() })
        }
        Err(blockers) => Ok(SetupAdvance { settings: settings.to_wire(), blockers: blockers.to_wire() }),
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
    let mut emit = move |e: CoreEvent| {
        let _ = on_event.send(e.to_wire());
    };
    let summary = tauri::async_runtime::spawn_blocking(move || speed_test(PathBuf::from(dir), seconds, &mut emit))
        .await
        .map_err(join_error)??;
    state.setup.update(|s| s.speed = Some(summary))?;
    Ok(summary.to_wire())
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
    Ok(rows.to_wire())
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
    let emit: jobs::Emit = Arc::new(move |e: CoreEvent| {
        let _ = on_event.send(e.to_wire());
    });
    let (awake, held) = tauri::async_runtime::spawn_blocking(|| awake::hold("Downloading and preparing Kimi K3"))
        .await
        .map_err(join_error)?;
    emit(CoreEvent::Awake { held: held.is_ok(), detail: held.err() });
    let result = jobs::run(state.setup.clone(), state.worker.clone(), emit.clone(), stop, state.context_length()).await;
    state.setup.end_job();
    let _ = tauri::async_runtime::spawn_blocking(move || drop(awake)).await;
    match &result {
        Ok(Some(model)) => tell(&app, "Kimi K3 is ready", &format!("{} is loaded: the chat is yours.", model.name)),
        Ok(None) => log::info!("setup paused at {:?}", state.setup.settings().step),
        Err(e) => {
            log::warn!("setup stopped at {:?}: {}", state.setup.settings().step, e.message);
            emit(CoreEvent::Failed { error: e.clone() });
            tell(&app, "Kimi K3 setup stopped", &e.message);
        }
    }
    Ok(result?.to_wire())
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
    Ok(k3_app::setup::problem::save_token(&k3_store::HubSettings::from_env().token_path, &token)?)
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
    let settings = state.setup.update(|s| {
        s.store_dir = Some(path.clone());
        s.adopted = true;
        s.preset = s.preset.clone().or(Some("auto".into()));
        s.step = SetupStep::Download;
    })?;
    Ok(settings.to_wire())
}

/// "Try the demo model" (or reopening the wizard later with `false`).
#[tauri::command]
pub fn setup_dismiss(state: State<'_, AppState>, dismissed: bool) -> Result<SetupStatus, IpcError> {
    state.setup.update(|s| s.dismissed = dismissed)?;
    Ok(status_of(&state))
}
