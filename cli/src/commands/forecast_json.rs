//! `k3 forecast --json`: one object with the model's footprint, the machine, the drive and
//! kernel rates, the assumptions and each preset's plan and forecast — typed ([`ForecastJson`]),
//! so the JSON is derived (field order is key order).

use k3_plan::{Budget, Forecast};
use serde::Serialize;

use super::forecast_disk::DiskSource;
use super::forecast_json_parts::{plan_json, BudgetJson, FootprintJson, ForecastFigures, PlanJson};
use super::forecast_notes::{hit_note, model_notes};
use super::forecast_report::{Entry, Report};

/// The `--json` object.
#[derive(Serialize)]
pub struct ForecastJson {
    model: String,
    footprint: FootprintJson,
    trunk_streamed: bool,
    context_length: u64,
    machine: MachineJson,
    disk: DiskJson,
    compute: ComputeJson,
    assumptions: Vec<String>,
    presets: Vec<EntryJson>,
}

#[derive(Serialize)]
struct MachineJson {
    cpu: String,
    isa: &'static str,
    mem_total_bytes: u64,
    mem_available_bytes: u64,
}

#[derive(Serialize)]
struct DiskJson {
    trunk_gbps: f64,
    expert_gbps: f64,
    sweep_best_gbps: Option<f64>,
    source: &'static str,
}

#[derive(Serialize)]
struct ComputeJson {
    threads: usize,
    bf16_gbps: f64,
    expert_gbps: f64,
    measure_seconds: f64,
}

/// A preset: its forecast and plan, or the planner's refusal.
#[derive(Serialize)]
#[serde(untagged)]
enum EntryJson {
    Planned {
        #[serde(flatten)]
        forecast: ForecastFigures,
        preset: String,
        budget: Option<BudgetJson>,
        plan: PlanJson,
        assumptions: [String; 1],
    },
    Refused {
        preset: String,
        budget: Option<BudgetJson>,
        plan: Option<PlanJson>,
        error: String,
    },
}

fn entry_json(r: &Report, e: &Entry) -> EntryJson {
    let budget = e.budget.map(|b: Budget| BudgetJson { trunk_bytes: b.trunk_bytes, cache_bytes: b.cache_bytes });
    let preset = e.name.clone();
    match &e.outcome {
        Err(err) => EntryJson::Refused { preset, budget, plan: None, error: err.to_string() },
        Ok(p) => EntryJson::Planned {
            forecast: ForecastFigures::of(&p.forecast as &Forecast),
            preset,
            budget,
            plan: plan_json(r, p),
            assumptions: [hit_note(r, p)],
        },
    }
}

/// The `--json` object of `r`.
pub fn json(r: &Report) -> ForecastJson {
    let (source, sweep_best_gbps) = match &r.disk.source {
        DiskSource::Flag => ("flag", None),
        DiskSource::Measured { best, .. } => ("measured", Some(best.gbps)),
        DiskSource::Default => ("default", None),
    };
    ForecastJson {
        model: r.subject.model_dir.as_ref().map_or("released".to_string(), |d| d.display().to_string()),
        footprint: FootprintJson::of(&r.subject.footprint),
        trunk_streamed: r.subject.trunk_streamed,
        context_length: r.context_length,
        machine: MachineJson {
            cpu: super::bench::cpu_name(),
            isa: k3_engine::tools::kernel_isa(),
            mem_total_bytes: r.machine.usable_total_bytes(),
            mem_available_bytes: r.machine.usable_available_bytes(),
        },
        disk: DiskJson { trunk_gbps: r.disk.trunk_gbps, expert_gbps: r.disk.expert_gbps, sweep_best_gbps, source },
        compute: ComputeJson {
            threads: r.compute.threads,
            bf16_gbps: r.compute.rates.bf16_bytes_per_second / 1e9,
            expert_gbps: r.compute.rates.expert_bytes_per_second / 1e9,
            measure_seconds: r.compute.seconds,
        },
        assumptions: model_notes(r),
        presets: r.entries.iter().map(|e| entry_json(r, e)).collect(),
    }
}
