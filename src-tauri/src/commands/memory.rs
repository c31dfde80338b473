//! Settings › Memory commands: the view with every preset's plan, one choice's preview,
//! and applying a choice and placement between generations (the runtime's replan, no
//! restart). A placement by cost plans with this run's measured rates, and those rates are
//! saved with it.

use std::sync::Arc;

use k3_app::memory::preview::{cost_rule, memory_view, preview, ComputeRatesOnce, PreviewContext};
use k3_app::memory::{MemoryChoice as CoreChoice, MemorySetting, Placement as CorePlacement};
use k3_app::setup::SetupHost;
use k3_app::worker::{model_info, Worker};
use k3_runtime::ReplanRequest;
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::model::join_error;
use crate::ipc::error::IpcError;
use crate::ipc::memory::{MemoryApplied, MemoryChoice, MemoryView, Placement, PlanPreview, ReplanProgressEvent};
use crate::ipc::twin::{FromWire, ToWire};
use crate::state::AppState;

/// What a preview reads, detached from the command's borrow so it can run off the async
/// runtime (the first preview measures the CPU for ≈ 1.5 s).
struct Sources {
    worker: Arc<Worker>,
    setup: Arc<SetupHost>,
    rates: Arc<ComputeRatesOnce>,
    memory: MemorySetting,
}

impl Sources {
    fn of(state: &AppState) -> Sources {
        Sources {
            worker: state.worker.clone(),
            setup: state.setup.clone(),
            rates: state.compute_rates.clone(),
            memory: state.memory(),
        }
    }
}

/// What the previews are asked about: `None` keeps what is in force.
#[derive(Debug, Clone, Copy, Default)]
struct Asked {
    context_length: Option<usize>,
    placement: Option<CorePlacement>,
}

async fn off_thread<T: Send + 'static>(
    sources: Sources,
    asked: Asked,
    f: impl FnOnce(&PreviewContext<'_>) -> T + Send + 'static,
) -> Result<T, IpcError> {
    tauri::async_runtime::spawn_blocking(move || with_context(&sources, asked, f)).await.map_err(join_error)?
}

/// Refuses a context length the engine would refuse, naming the limits.
fn check_context(context_length: Option<usize>) -> Result<(), IpcError> {
    match context_length {
        Some(n) if n == 0 || n > k3_engine::MAX_CONTEXT => Err(IpcError::invalid(format!(
            "a context of {n} positions is not between 1 and {}",
            k3_engine::MAX_CONTEXT
        ))),
        _ => Ok(()),
    }
}

fn with_context<T>(state: &Sources, asked: Asked, f: impl FnOnce(&PreviewContext<'_>) -> T) -> Result<T, IpcError> {
    let now = state.worker.probe().snapshot();
    let model = now.model.ok_or_else(crate::commands::model::no_model)?;
    let plan_bytes = model.plan.as_ref().map_or(0, |p| p.total_bytes);
    let disk = state.setup.settings().speed.map(|s| k3_plan::DiskRates {
        trunk_bytes_per_second: s.qd16_mb_per_s * 1e6,
        expert_bytes_per_second: s.qd16_mb_per_s * 1e6,
    });
    let in_force = state.memory;
    let placement = asked.placement.unwrap_or(in_force.placement());
    // The rates this run would place by cost with, or why it cannot (the page says so).
    let by_cost = cost_rule(&model, disk, &state.rates);
    let rule = match placement {
        CorePlacement::Prefix => Ok(k3_plan::ResidencyRule::Prefix),
        CorePlacement::Cost if in_force.placement() == CorePlacement::Cost && asked.placement.is_none() => {
            Ok(in_force.residency)
        }
        CorePlacement::Cost => by_cost.clone(),
    };
    let cost_note = by_cost.err();
    let ctx = PreviewContext {
        model: &model,
        machine: now.machine,
        current_plan_bytes: plan_bytes.min(now.rss_bytes.unwrap_or(0)),
        disk,
        rates: state.rates.get(),
        context_length: asked.context_length.unwrap_or(model.context_length),
        placement: (placement, rule),
        cost_note,
    };
    Ok(f(&ctx))
}

/// The choice in force, its plan and every preset's, with forecasts when the drive was measured.
#[tauri::command]
pub async fn memory_settings(state: State<'_, AppState>) -> Result<MemoryView, IpcError> {
    let current = state.memory();
    off_thread(Sources::of(&state), Asked::default(), move |ctx| memory_view(ctx, &current).to_wire()).await
}

/// `choice`'s plan and forecast on the loaded model at `context_length` positions with its
/// layers placed by `placement` (those in force when null), before applying it.
#[tauri::command]
pub async fn plan_preview(
    state: State<'_, AppState>,
    choice: MemoryChoice,
    context_length: Option<usize>,
    placement: Option<Placement>,
) -> Result<PlanPreview, IpcError> {
    check_context(context_length)?;
    let (choice, placement) = (CoreChoice::from_wire(choice), Option::<CorePlacement>::from_wire(placement));
    let asked = Asked { context_length, placement };
    off_thread(Sources::of(&state), asked, move |ctx| preview(ctx, choice, &ctx.placement.1).to_wire()).await
}

/// Every preset's plan at `context_length` positions, placed by `placement` (the one in
/// force when null): what the context field and the placement change.
#[tauri::command]
pub async fn memory_what_if(
    state: State<'_, AppState>,
    context_length: usize,
    placement: Option<Placement>,
) -> Result<MemoryView, IpcError> {
    check_context(Some(context_length))?;
    let current = state.memory();
    let asked = Asked { context_length: Some(context_length), placement: FromWire::from_wire(placement) };
    off_thread(Sources::of(&state), asked, move |ctx| memory_view(ctx, &current).to_wire()).await
}

/// Applies `choice` (and `context_length` and `placement` when given) after the reply in
/// progress (at once when idle), without a restart, and saves them for the next start; a
/// refused plan changes nothing. A placement by cost plans at the rates its preview showed.
#[tauri::command]
pub async fn apply_memory(
    state: State<'_, AppState>,
    choice: MemoryChoice,
    context_length: Option<usize>,
    placement: Option<Placement>,
    on_event: Channel<ReplanProgressEvent>,
) -> Result<MemoryApplied, IpcError> {
    check_context(context_length)?;
    let (choice, placement) = (CoreChoice::from_wire(choice), Option::<CorePlacement>::from_wire(placement));
    let started = std::time::Instant::now();
    let asked = Asked { context_length, placement };
    let residency = off_thread(Sources::of(&state), asked, |ctx| ctx.placement.1.clone())
        .await?
        .map_err(|why| IpcError::invalid(why).with_details(format!("Applying the memory choice {}", choice.name())))?;
    let runtime = state.worker.runtime();
    let progress = Box::new(move |done: usize, total: usize| {
        let _ = on_event.send(ReplanProgressEvent { layers_done: done as u32, layers_total: total as u32 });
    });
    let request = ReplanRequest { choice: Some(choice.budget()), context_length, residency: Some(residency) };
    let summary = tauri::async_runtime::spawn_blocking(move || runtime.replan_with(request, progress))
        .await
        .map_err(join_error)?
        .map_err(|e| {
            log::warn!("memory choice {} refused: {e}", choice.name());
            IpcError::from(&e).with_details(format!("Applying the memory choice {}", choice.name()))
        })?;
    // A context the user set is kept for the next start; otherwise the next start fits one again.
    let kept_context = context_length.or(state.memory().context_length);
    let setting = MemorySetting { choice, context_length: kept_context, residency: summary.residency };
    log::info!(
        "memory choice {} ({:?} placement) applied in {} ms: {}",
        choice.name(),
        setting.placement(),
        started.elapsed().as_millis(),
        model_info(&summary).memory
    );
    state.set_memory(setting)?;
    let view = off_thread(Sources::of(&state), Asked::default(), move |ctx| memory_view(ctx, &setting)).await?;
    Ok(MemoryApplied {
        model: model_info(&summary).to_wire(),
        view: view.to_wire(),
        took_ms: started.elapsed().as_millis() as u64,
    })
}
