//! A memory choice's plan and forecast, computed before it is applied: the same
//! `k3_plan` calls as the engine's replan, on the loaded model's footprint.
//!
//! Owns: [`PlanPreview`], [`MemoryView`] (the Settings page: the current choice, every
//! preset's preview, the minimums and the footprint the page's planner works from),
//! [`preview`], [`memory_view`] and [`cost_rule`] (the rates a placement by cost plans with).
//! Must not: measure anything slow per call: the CPU's rates are measured once
//! ([`ComputeRatesOnce`]) and the disk rate is the speed test's.

use std::sync::OnceLock;
use std::time::Duration;

use k3_engine::measure_decode_rate;
use k3_engine::measure_decode_rates;
use k3_plan::{
    expert_slot_bytes, forecast, plan_memory_by, ComputeRates, CostRates, DiskRates, ForecastInput, MachineMemory,
    MemoryRequest, ResidencyRule,
};
use k3_plan_wasm::dto::{CgroupJson, FootprintJson, MachineJson, RatesJson};
use k3_runtime::ModelSummary;

use super::{MemoryChoice, MemorySetting, Placement, PresetName};

/// One choice's plan on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanPreview {
    pub choice: MemoryChoice,
    /// The planner's refusal, when it refuses (then the numbers are 0).
    pub problem: Option<String>,
    pub pinned_layers: u32,
    pub layers: u32,
    pub ring_slots: u32,
    pub trunk_bytes: u64,
    pub expert_slots: u64,
    pub cache_bytes: u64,
    pub total_bytes: u64,
    /// Available memory (with this model's current plan given back) minus this plan.
    pub headroom_bytes: f64,
    /// Headroom below the `auto` reserve (2 GB + 2 % of available): warned about.
    pub tight: bool,
    /// Seconds per token `[low, high]` from `k3_plan::forecast`; `None` without a speed test.
    pub seconds_low: Option<f64>,
    pub seconds_high: Option<f64>,
    /// The largest context this choice keeps its trunk and cache at on this machine
    /// (`k3_plan::default_context`); `None` when none fits.
    pub default_context: Option<u64>,
    /// The most conversations this choice has memory for at once at the previews' context,
    /// each with its state and KV cache (`k3_plan::batch_fit`: what `k3 serve --batch` may
    /// decode together); `None` when the choice is refused.
    pub largest_batch: Option<u64>,
}

/// What Settings › Memory shows.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryView {
    /// The choice in force.
    pub current: MemoryChoice,
    /// How the plan in force places the trunk's layers.
    pub placement: Placement,
    /// How the presets' previews place them (the one asked about).
    pub preview_placement: Placement,
    /// Why layers cannot be placed by measured cost here (then only the prefix is offered).
    pub cost_placement_note: Option<String>,
    /// `None` when the model keeps every weight resident (the plan cannot change).
    pub current_plan: Option<PlanPreview>,
    pub presets: Vec<PlanPreview>,
    /// Whether unpinned trunk layers can stream (a packed trunk is in use).
    pub streamed_trunk: bool,
    /// Smallest trunk budget (one ring slot of the largest layer, or of the largest piece
    /// when layers can stream in pieces) and cache budget.
    pub min_trunk_bytes: u64,
    pub min_cache_bytes: u64,
    pub whole_trunk_bytes: u64,
    /// Why no forecast is shown, when none is.
    pub forecast_note: Option<String>,
    /// Positions each conversation's KV cache is reserved for, in force.
    pub context_length: u32,
    /// The previews' context length (the one asked about).
    pub preview_context_length: u32,
    pub max_context_length: u32,
    /// RAM one position of context costs (the MLA cache of every MLA layer).
    pub kv_bytes_per_position: u64,
    /// What the page's planner (k3_plan in WebAssembly) needs to plan any choice as the user
    /// drags a budget: sent once with this view.
    pub planner: PlannerInputs,
}

/// The footprint, machine and rates the page plans from (plan-wasm's JSON shapes).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerInputs {
    pub footprint: FootprintJson,
    /// MemAvailable with this model's current plan given back (what a new plan may take).
    pub machine: MachineJson,
    pub streamed_trunk: bool,
    pub io_threads: u32,
    /// Headroom below this is "tight" (the `auto` reserve, `k3_plan::auto_headroom`).
    pub reserve_bytes: u64,
    /// `None` until the drive's speed test ran (then no forecast).
    pub rates: Option<RatesJson>,
}

/// The CPU's kernel rates (≈ 1.5 s) and trunk-decoder rate (≈ 0.5 s), each measured on
/// first use and kept.
#[derive(Default)]
pub struct ComputeRatesOnce {
    kernels: OnceLock<Option<ComputeRates>>,
    decoder: OnceLock<Option<f64>>,
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl ComputeRatesOnce {
    /// The kernels' BF16 and expert rates on every core.
    pub fn get(&self) -> Option<ComputeRates> {
        *self.kernels.get_or_init(|| measure_decode_rates(cores(), Duration::from_millis(1500)).ok().map(|r| r.rates))
    }

    /// The trunk decoder's output bytes per second on every core.
    pub fn decoder(&self) -> Option<f64> {
        *self.decoder.get_or_init(|| measure_decode_rate(cores()).ok())
    }
}

/// The rule a preview plans by, or why it cannot be planned here.
pub type PreviewRule = Result<ResidencyRule, String>;

/// Placing by cost on `model` at this run's measured rates (the speed test's drive rate, the
/// CPU's measured once), or why that cannot be done here.
pub fn cost_rule(model: &ModelSummary, disk: Option<DiskRates>, cpu: &ComputeRatesOnce) -> PreviewRule {
    if !model.streams_trunk() {
        return Err("This model has no packed trunk, so every layer stays in RAM: there is nothing to place.".into());
    }
    let Some(disk) = disk else {
        return Err("Placing layers by measured cost weighs the drive: run the drive speed test first (Performance › Drive speed).".into());
    };
    let (Some(compute), Some(decode_bytes_per_second)) = (cpu.get(), cpu.decoder()) else {
        return Err("The CPU's kernel and decoder rates could not be measured.".into());
    };
    Ok(ResidencyRule::ByCost(CostRates { disk, compute, decode_bytes_per_second }))
}

/// What every preview of one model shares.
pub struct PreviewContext<'a> {
    pub model: &'a ModelSummary,
    pub machine: MachineMemory,
    /// Memory the model's current plan holds (given back when another plan replaces it).
    pub current_plan_bytes: u64,
    pub disk: Option<DiskRates>,
    pub rates: Option<ComputeRates>,
    /// Positions each conversation's KV cache is reserved for, in the previewed plans.
    pub context_length: usize,
    /// The placement the previews plan by, and its rule.
    pub placement: (Placement, PreviewRule),
    /// Why a placement by cost cannot be planned here (`None`: it can).
    pub cost_note: Option<String>,
}

/// `choice`'s plan and forecast, its layers placed by `rule`.
pub fn preview(ctx: &PreviewContext<'_>, choice: MemoryChoice, rule: &PreviewRule) -> PlanPreview {
    let m = ctx.model;
    let empty = PlanPreview {
        choice,
        problem: None,
        pinned_layers: 0,
        layers: m.layers as u32,
        ring_slots: 0,
        trunk_bytes: 0,
        expert_slots: 0,
        cache_bytes: 0,
        total_bytes: 0,
        headroom_bytes: 0.0,
        tight: false,
        seconds_low: None,
        seconds_high: None,
        default_context: None,
        largest_batch: None,
    };
    let req = MemoryRequest {
        choice: choice.budget(),
        streamed_trunk: m.streams_trunk(),
        context_length: ctx.context_length as u64,
        io_threads: m.io_threads as u64,
    };
    let rule = match rule {
        Ok(rule) => *rule,
        Err(why) => return PlanPreview { problem: Some(why.clone()), ..empty },
    };
    // `auto` sizes itself from what is available once this model's plan is given back.
    let freed = freed_machine(ctx);
    let plan = match plan_memory_by(&m.footprint, &req, freed, false, (rule, None)) {
        Ok(p) => p,
        Err(e) => return PlanPreview { problem: Some(e.to_string()), ..empty },
    };
    let forecast = match (ctx.disk, ctx.rates) {
        (Some(disk), Some(rates)) => forecast(&ForecastInput {
            footprint: &m.footprint,
            plan: &plan,
            trunk_streamed: m.streams_trunk(),
            disk,
            rates,
            // The app packs its trunk raw (`setup::jobs`), so nothing is decoded.
            coding: None,
        })
        .ok(),
        _ => None,
    };
    let headroom = k3_plan::headroom_bytes(freed, &plan);
    let shape = k3_plan::RunShape { streamed_trunk: m.streams_trunk(), io_threads: m.io_threads as u64 };
    PlanPreview {
        default_context: k3_plan::default_context(&m.footprint, choice.budget(), shape, freed),
        largest_batch: k3_plan::batch_fit(&m.footprint, choice.budget(), shape, freed, req.context_length)
            .ok()
            .map(|f| f.largest),
        pinned_layers: plan.pinned_layers as u32,
        ring_slots: plan.ring_slots as u32,
        trunk_bytes: plan.trunk_bytes,
        expert_slots: plan.cache_slots,
        cache_bytes: plan.cache_bytes,
        total_bytes: plan.total_bytes,
        headroom_bytes: headroom as f64,
        tight: headroom < k3_plan::auto_headroom(freed) as i64,
        seconds_low: forecast.map(|f| f.seconds_per_token.low),
        seconds_high: forecast.map(|f| f.seconds_per_token.high),
        ..empty
    }
}

fn planner_inputs(ctx: &PreviewContext<'_>) -> PlannerInputs {
    let m = freed_machine(ctx);
    PlannerInputs {
        footprint: FootprintJson::from(&ctx.model.footprint),
        machine: MachineJson {
            total_bytes: m.total_bytes,
            available_bytes: m.available_bytes,
            cgroup: m.cgroup.map(|c| CgroupJson { limit_bytes: c.limit_bytes, usage_bytes: c.usage_bytes }),
        },
        streamed_trunk: ctx.model.streams_trunk(),
        io_threads: ctx.model.io_threads as u32,
        reserve_bytes: k3_plan::auto_headroom(m),
        rates: match (ctx.disk, ctx.rates) {
            (Some(d), Some(r)) => Some(RatesJson {
                disk_trunk_bytes_per_second: d.trunk_bytes_per_second,
                disk_expert_bytes_per_second: d.expert_bytes_per_second,
                bf16_bytes_per_second: r.bf16_bytes_per_second,
                expert_bytes_per_second: r.expert_bytes_per_second,
            }),
            _ => None,
        },
    }
}

/// The machine with this model's current plan given back (what another plan may take).
fn freed_machine(ctx: &PreviewContext<'_>) -> MachineMemory {
    MachineMemory { available_bytes: ctx.machine.available_bytes.saturating_add(ctx.current_plan_bytes), ..ctx.machine }
}

/// The Settings page's view of `current` on the loaded model.
pub fn memory_view(ctx: &PreviewContext<'_>, current: &MemorySetting) -> MemoryView {
    let fp = &ctx.model.footprint;
    let slot = expert_slot_bytes(fp.expert_bytes);
    let (preview_placement, rule) = &ctx.placement;
    MemoryView {
        current: current.choice,
        placement: current.placement(),
        preview_placement: *preview_placement,
        cost_placement_note: ctx.cost_note.clone(),
        current_plan: ctx.model.plan.as_ref().map(|_| preview(ctx, current.choice, &Ok(current.residency))),
        presets: PresetName::ALL.into_iter().map(|name| preview(ctx, MemoryChoice::Preset { name }, rule)).collect(),
        streamed_trunk: ctx.model.streams_trunk(),
        min_trunk_bytes: if ctx.model.streams_trunk() {
            k3_plan::trunk_floor_bytes(fp)
        } else {
            fp.trunk_total_bytes()
        },
        min_cache_bytes: fp.top_k.saturating_add(1).min(fp.n_experts_total).saturating_mul(slot),
        whole_trunk_bytes: fp.trunk_total_bytes(),
        context_length: ctx.model.context_length as u32,
        preview_context_length: ctx.context_length as u32,
        max_context_length: k3_engine::MAX_CONTEXT as u32,
        kv_bytes_per_position: fp.kv_bytes_per_position,
        planner: planner_inputs(ctx),
        forecast_note: match (ctx.disk, ctx.rates) {
            (None, _) if ctx.model.is_demo => {
                Some("The bundled demo model is read into RAM: there is no drive to measure for a forecast.".into())
            }
            (None, _) => {
                Some("Run the drive speed test (Performance › Drive speed) for a seconds-per-token forecast.".into())
            }
            (_, None) => Some("The CPU's kernel rates could not be measured.".into()),
            _ => None,
        },
    }
}
