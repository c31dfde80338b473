//! `k3 forecast --json`'s footprint and each preset's budget, plan and forecast figures,
//! typed (a leaf of `forecast_json`).

use k3_plan::{Footprint, Forecast, MemoryPlan};
use serde::Serialize;

use super::forecast_report::{Planned, Report};

/// The model's footprint, as the forecast read it.
#[derive(Serialize)]
pub struct FootprintJson {
    layers: usize,
    trunk_bytes: u64,
    expert_bytes: u64,
    experts_total: u64,
    moe_layers: u64,
    top_k: u64,
    resident_bytes: u64,
    head_bytes: u64,
    state_bytes: u64,
    kv_bytes_per_position: u64,
}

impl FootprintJson {
    pub fn of(fp: &Footprint) -> Self {
        FootprintJson {
            layers: fp.layer_trunk_bytes.len(),
            trunk_bytes: fp.trunk_total_bytes(),
            expert_bytes: fp.expert_bytes,
            experts_total: fp.n_experts_total,
            moe_layers: fp.moe_layers,
            top_k: fp.top_k,
            resident_bytes: fp.resident_bytes,
            head_bytes: fp.head_bytes,
            state_bytes: fp.state_bytes,
            kv_bytes_per_position: fp.kv_bytes_per_position,
        }
    }
}

/// One preset's forecast: hit rates, bytes, seconds.
#[derive(Serialize)]
pub struct ForecastFigures {
    hit_rate: Range3,
    bytes_per_token: BytesPerToken,
    io_seconds: f64,
    io_seconds_range: LowHigh,
    compute_seconds: f64,
    decode_seconds: f64,
    seconds_per_token: SecondsPerToken,
}

/// A figure at the hit-rate floor, as expected, and at the ceiling.
#[derive(Serialize)]
struct Range3 {
    floor: f64,
    expected: f64,
    ceiling: f64,
}

#[derive(Serialize)]
struct BytesPerToken {
    trunk: u64,
    experts: f64,
    experts_at_floor: f64,
    experts_at_ceiling: f64,
}

#[derive(Serialize)]
struct LowHigh {
    low: f64,
    high: f64,
}

#[derive(Serialize)]
struct SecondsPerToken {
    low: f64,
    high: f64,
    expected_overlapped: f64,
    expected_serial: f64,
}

impl ForecastFigures {
    pub fn of(f: &Forecast) -> Self {
        ForecastFigures {
            hit_rate: Range3 { floor: f.hit_rate.floor, expected: f.hit_rate.uniform, ceiling: f.hit_rate.ceiling },
            bytes_per_token: BytesPerToken {
                trunk: f.trunk_bytes,
                experts: f.expert_bytes.uniform,
                experts_at_floor: f.expert_bytes.floor,
                experts_at_ceiling: f.expert_bytes.ceiling,
            },
            io_seconds: f.io_seconds.uniform,
            io_seconds_range: LowHigh { low: f.io_seconds.ceiling, high: f.io_seconds.floor },
            compute_seconds: f.compute_seconds,
            decode_seconds: f.decode_seconds,
            seconds_per_token: SecondsPerToken {
                low: f.seconds_per_token.low,
                high: f.seconds_per_token.high,
                expected_overlapped: f.seconds_per_token.expected_overlapped,
                expected_serial: f.seconds_per_token.expected_serial,
            },
        }
    }
}

/// A preset's budgets.
#[derive(Serialize)]
pub struct BudgetJson {
    pub trunk_bytes: u64,
    pub cache_bytes: u64,
}

/// A preset's plan: its slots and bytes, against what this machine has available.
#[derive(Serialize)]
pub struct PlanJson {
    pinned_layers: usize,
    layers: usize,
    ring_slots: usize,
    ring_slot_bytes: u64,
    expert_slots: u64,
    expert_slot_bytes: u64,
    trunk_bytes: u64,
    cache_bytes: u64,
    fixed_bytes: u64,
    peak_rss_bytes: u64,
    headroom_bytes: Option<i64>,
    fits: Option<bool>,
    shortfall: Option<String>,
}

pub fn plan_json(r: &Report, p: &Planned) -> PlanJson {
    let plan: &MemoryPlan = &p.plan;
    PlanJson {
        pinned_layers: plan.pinned_layers,
        layers: r.subject.footprint.layer_trunk_bytes.len(),
        ring_slots: plan.ring_slots,
        ring_slot_bytes: plan.ring_slot_bytes,
        expert_slots: plan.cache_slots,
        expert_slot_bytes: plan.cache_slot_bytes,
        trunk_bytes: plan.trunk_bytes,
        cache_bytes: plan.cache_bytes,
        fixed_bytes: plan.fixed_bytes,
        peak_rss_bytes: plan.total_bytes,
        headroom_bytes: p.headroom().map(|h| h as i64),
        fits: p.available.map(|a| plan.total_bytes <= a),
        shortfall: p.shortfall().map(|e| e.to_string()),
    }
}
