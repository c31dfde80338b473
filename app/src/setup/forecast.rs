//! The Preset screen's rows: each preset's plan on this machine for the released model and
//! its seconds-per-token range at the speed test's bandwidth and this CPU's measured
//! kernel rates (`k3_plan::forecast`, the same arithmetic as `k3 forecast`).
//!
//! Owns: [`PresetRow`], [`preset_rows`].

use std::time::Duration;

use k3_engine::measure_decode_rates;
use k3_io::sysinfo::machine_memory;
use k3_plan::{plan_memory, BudgetChoice, DiskRates, ForecastInput, MemoryRequest, Preset};

use super::settings::SpeedSummary;
use crate::error::AppError;

#[derive(Debug, Clone, PartialEq)]
pub struct PresetRow {
    pub name: String,
    /// The plan fits this machine's available memory.
    pub fits: bool,
    /// The planner's refusal, when it refuses.
    pub problem: Option<String>,
    pub pinned_layers: u32,
    pub layers: u32,
    pub ring_slots: u32,
    pub expert_slots: u64,
    pub peak_bytes: u64,
    /// Available memory minus the plan (negative: short by that much).
    pub headroom_bytes: f64,
    pub seconds_low: f64,
    pub seconds_high: f64,
    /// `io + compute` at the expected hit rate (what the bands judge).
    pub seconds_expected: f64,
    /// The largest context this preset keeps its trunk and cache at on this machine
    /// (`k3_plan::default_context`); `None` when none fits.
    pub default_context: Option<u64>,
    /// RAM one position of context costs.
    pub kv_bytes_per_position: u64,
}

/// One row per preset (`auto` first) at the speed test's figures.
pub fn preset_rows(speed: &SpeedSummary, context_length: usize) -> Result<Vec<PresetRow>, AppError> {
    let fp = k3_plan::released_footprint();
    let machine = machine_memory();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let compute = measure_decode_rates(threads, Duration::from_millis(1500)).map_err(|e| AppError::from(&e))?;
    let disk = DiskRates {
        trunk_bytes_per_second: speed.qd16_mb_per_s * 1e6,
        expert_bytes_per_second: speed.qd16_mb_per_s * 1e6,
    };
    let available = machine.usable_available_bytes() as f64;
    let mut order = vec![Preset::Auto];
    order.extend(Preset::ALL.into_iter().filter(|p| *p != Preset::Auto));
    let io_threads = k3_engine::MemoryOptions::resident().io_threads as u64;
    Ok(order
        .into_iter()
        .map(|preset| {
            let req = MemoryRequest {
                choice: preset.choice(),
                streamed_trunk: true,
                context_length: context_length as u64,
                io_threads,
            };
            let empty = PresetRow {
                name: preset.name().into(),
                fits: false,
                problem: None,
                pinned_layers: 0,
                layers: fp.layer_trunk_bytes.len() as u32,
                ring_slots: 0,
                expert_slots: 0,
                peak_bytes: 0,
                headroom_bytes: 0.0,
                seconds_low: 0.0,
                seconds_high: 0.0,
                seconds_expected: 0.0,
                default_context: k3_plan::default_context(
                    &fp,
                    preset.choice(),
                    k3_plan::RunShape { streamed_trunk: true, io_threads },
                    machine,
                ),
                kv_bytes_per_position: fp.kv_bytes_per_position,
            };
            let plan = match plan_memory(&fp, &req, machine, false) {
                Ok(p) => p,
                Err(e) => return PresetRow { problem: Some(e.to_string()), ..empty },
            };
            let input = ForecastInput {
                footprint: &fp,
                plan: &plan,
                trunk_streamed: true,
                disk,
                rates: compute.rates,
                coding: None,
            };
            let f = match k3_plan::forecast(&input) {
                Ok(f) => f,
                Err(e) => return PresetRow { problem: Some(format!("forecast: {e}")), ..empty },
            };
            let headroom = k3_plan::headroom_bytes(machine, &plan) as f64;
            PresetRow {
                fits: headroom >= 0.0,
                problem: (headroom < 0.0).then(|| {
                    format!("needs {:.1} GB, {:.1} GB available", plan.total_bytes as f64 / 1e9, available / 1e9)
                }),
                pinned_layers: plan.pinned_layers as u32,
                ring_slots: plan.ring_slots as u32,
                expert_slots: plan.cache_slots,
                peak_bytes: plan.total_bytes,
                headroom_bytes: headroom,
                seconds_low: f.seconds_per_token.low,
                seconds_high: f.seconds_per_token.high,
                seconds_expected: f.seconds_per_token.expected_serial,
                ..empty
            }
        })
        .collect())
}

/// The `BudgetChoice` of a preset name.
pub fn choice_of(name: &str) -> Option<BudgetChoice> {
    Preset::from_name(name).ok().map(|p| p.choice())
}
