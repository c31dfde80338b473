//! `k3 forecast --json`: one object with the model's footprint, the machine, the drive and
//! kernel rates, the assumptions and each preset's plan and forecast.

use k3_plan::Forecast;
use serde_json::{json, Value};

use super::forecast_disk::DiskSource;
use super::forecast_notes::{hit_note, model_notes};
use super::forecast_report::{Entry, Planned, Report};

fn plan_json(r: &Report, p: &Planned) -> Value {
    let plan = &p.plan;
    json!({
        "pinned_layers": plan.pinned_layers,
        "layers": r.subject.footprint.layer_trunk_bytes.len(),
        "ring_slots": plan.ring_slots,
        "ring_slot_bytes": plan.ring_slot_bytes,
        "expert_slots": plan.cache_slots,
        "expert_slot_bytes": plan.cache_slot_bytes,
        "trunk_bytes": plan.trunk_bytes,
        "cache_bytes": plan.cache_bytes,
        "fixed_bytes": plan.fixed_bytes,
        "peak_rss_bytes": plan.total_bytes,
        "headroom_bytes": p.headroom().map(|h| h as i64),
        "fits": p.available.map(|a| plan.total_bytes <= a),
        "shortfall": p.shortfall().map(|e| e.to_string()),
    })
}

fn forecast_json(f: &Forecast) -> Value {
    json!({
        "hit_rate": { "floor": f.hit_rate.floor, "expected": f.hit_rate.uniform, "ceiling": f.hit_rate.ceiling },
        "bytes_per_token": {
            "trunk": f.trunk_bytes,
            "experts": f.expert_bytes.uniform,
            "experts_at_floor": f.expert_bytes.floor,
            "experts_at_ceiling": f.expert_bytes.ceiling,
        },
        "io_seconds": f.io_seconds.uniform,
        "io_seconds_range": { "low": f.io_seconds.ceiling, "high": f.io_seconds.floor },
        "compute_seconds": f.compute_seconds,
        "decode_seconds": f.decode_seconds,
        "seconds_per_token": {
            "low": f.seconds_per_token.low,
            "high": f.seconds_per_token.high,
            "expected_overlapped": f.seconds_per_token.expected_overlapped,
            "expected_serial": f.seconds_per_token.expected_serial,
        },
    })
}

fn entry_json(r: &Report, e: &Entry) -> Value {
    let budget = e.budget.map(|b| json!({ "trunk_bytes": b.trunk_bytes, "cache_bytes": b.cache_bytes }));
    match &e.outcome {
        Err(err) => json!({ "preset": e.name, "budget": budget, "plan": null, "error": err.to_string() }),
        Ok(p) => {
            let mut v = forecast_json(&p.forecast);
            v["preset"] = json!(e.name);
            v["budget"] = json!(budget);
            v["plan"] = plan_json(r, p);
            v["assumptions"] = json!([hit_note(r, p)]);
            v
        }
    }
}

/// The `--json` object.
pub fn json(r: &Report) -> Value {
    let fp = &r.subject.footprint;
    let disk_source = match r.disk.source {
        DiskSource::Flag => "flag",
        DiskSource::Measured { .. } => "measured",
        DiskSource::Default => "default",
    };
    json!({
        "model": r.subject.model_dir.as_ref().map_or("released".to_string(), |d| d.display().to_string()),
        "footprint": {
            "layers": fp.layer_trunk_bytes.len(), "trunk_bytes": fp.trunk_total_bytes(),
            "expert_bytes": fp.expert_bytes, "experts_total": fp.n_experts_total, "moe_layers": fp.moe_layers,
            "top_k": fp.top_k, "resident_bytes": fp.resident_bytes, "head_bytes": fp.head_bytes,
            "state_bytes": fp.state_bytes, "kv_bytes_per_position": fp.kv_bytes_per_position,
        },
        "trunk_streamed": r.subject.trunk_streamed,
        "context_length": r.context_length,
        "machine": {
            "cpu": super::bench::cpu_name(),
            "isa": k3_engine::tools::kernel_isa(),
            "mem_total_bytes": r.machine.usable_total_bytes(),
            "mem_available_bytes": r.machine.usable_available_bytes(),
        },
        "disk": {
            "trunk_gbps": r.disk.trunk_gbps,
            "expert_gbps": r.disk.expert_gbps,
            "sweep_best_gbps": match &r.disk.source { DiskSource::Measured { best, .. } => Some(best.gbps), _ => None },
            "source": disk_source,
        },
        "compute": {
            "threads": r.compute.threads,
            "bf16_gbps": r.compute.rates.bf16_bytes_per_second / 1e9,
            "expert_gbps": r.compute.rates.expert_bytes_per_second / 1e9,
            "measure_seconds": r.compute.seconds,
        },
        "assumptions": model_notes(r),
        "presets": r.entries.iter().map(|e| entry_json(r, e)).collect::<Vec<_>>(),
    })
}
