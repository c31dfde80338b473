//! How `k3 forecast` prints: one JSON object (`--json`) or a table with the assumptions
//! under it. Every figure comes from the [`Report`]; nothing is computed here but units.

use k3_plan::{format_bytes, Forecast};
use serde_json::{json, Value};

use super::forecast::{Entry, Planned, Report};
use super::forecast_inputs::{DiskSource, DEFAULT_DISK_GBPS};

fn model_line(r: &Report) -> String {
    let trunk = if r.subject.trunk_streamed {
        "unpinned layers stream from a packed trunk"
    } else {
        "trunk resident (no --trunk)"
    };
    match &r.subject.model_dir {
        None => format!("released Kimi K3, sizes derived from the spec's tensor catalogue (§6.4); {trunk}"),
        Some(dir) => format!("checkpoint {}, sizes from its headers; {trunk}", dir.display()),
    }
}

fn disk_line(r: &Report) -> String {
    let (trunk, experts) = (r.disk.trunk_gbps, r.disk.expert_gbps);
    match &r.disk.source {
        DiskSource::Flag => format!("disk: {trunk:.2} GB/s for trunk and expert reads, given with --disk-gbps"),
        DiskSource::Default => format!(
            "disk: {DEFAULT_DISK_GBPS:.2} GB/s for trunk and expert reads, a conservative stated figure, not \
             measured (measure with --disk DIR or give --disk-gbps X)"
        ),
        DiskSource::Measured { best, trunk: t, experts: e, files, scratch } => format!(
            "disk: measured as the engine reads, through its reader (8 MiB pieces, 8 in flight, O_DIRECT): trunk \
             {trunk:.2} GB/s ({} MB windows one after another, {:.1} GB), experts {experts:.2} GB/s ({} B windows \
             at random offsets, {:.1} GB); the best point of a short O_DIRECT sweep was {:.2} GB/s ({:?} {} MiB × \
             {} in flight, 128 MB a point); over {}{}",
            t.window_bytes / 1_000_000,
            t.bytes_read as f64 / 1e9,
            e.window_bytes,
            e.bytes_read as f64 / 1e9,
            best.gbps,
            best.access,
            best.request_bytes >> 20,
            best.depth,
            if *scratch { "a scratch file".to_string() } else { format!("{} file(s)", files.len()) },
            if t.direct && e.direct { "" } else { "; O_DIRECT was refused, so the page cache is in the figure" }
        ),
    }
}

fn compute_line(r: &Report) -> String {
    let c = &r.compute;
    format!(
        "compute: trunk + lm_head bytes ÷ the BF16 matvec rate ({:.2} GB/s) + top-k × MoE layers routed experts ÷ the \
         MXFP4 expert rate ({:.2} GB/s), both measured on this CPU with {} thread(s) in {:.1} s; attention over the \
         context, recurrences and norms are not counted",
        c.rates.bf16_bytes_per_second / 1e9,
        c.rates.expert_bytes_per_second / 1e9,
        c.threads,
        c.seconds
    )
}

fn model_notes(r: &Report) -> Vec<String> {
    let fp = &r.subject.footprint;
    let mut notes = vec![
        model_line(r),
        disk_line(r),
        compute_line(r),
        format!(
            "expert hit rate: expected = LRU (the engine's default) under independent uniform routing: each layer keeps \
             the experts of its last m = ⌊slots ÷ {w}⌋ tokens, a request hits with 1 − (1 − {k}/{e})^m; ceiling = \
             min(1, slots ÷ {w}): within a token each expert is asked for once, so a slot serves at most one of its \
             {w} requests; floor = 0 (LRU keeps nothing on an adversarial routing) unless every expert has a \
             slot, then 1 once warm",
            w = fp.expert_requests_per_token(),
            k = fp.top_k,
            e = fp.experts_per_layer()
        ),
        "bytes per token: unpinned trunk layers + expert misses × expert bytes; I/O seconds = trunk bytes ÷ the \
         trunk rate + expert bytes ÷ the expert rate"
            .into(),
        "s/token: low = max(I/O at the ceiling hit rate, compute) (reads overlapped with compute); high = I/O at the \
         floor hit rate + compute (serial); expected = max(I/O, compute) … I/O + compute at the expected hit rate"
            .into(),
    ];
    if let Some(c) = &r.coding {
        let (read, raw): (u64, u64) = (c.layer_read_bytes.iter().sum(), fp.trunk_total_bytes());
        notes.push(format!(
            "coded trunk: streamed layers read {:.3} × their raw bytes ({} of {}); their raw bytes ÷ the decoder's \
             measured {:.2} GB/s are part of compute",
            read as f64 / raw.max(1) as f64,
            k3_plan::format_bytes(read),
            k3_plan::format_bytes(raw),
            c.decode_bytes_per_second / 1e9
        ));
    }
    notes
}

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

fn hit_note(r: &Report, p: &Planned) -> String {
    let w = r.subject.footprint.expert_requests_per_token().max(1);
    format!(
        "{} slots keep {} token(s) of {w} requests: hit rate floor {:.1} %, expected {:.1} %, ceiling {:.1} %",
        p.plan.cache_slots,
        p.plan.cache_slots / w,
        100.0 * p.forecast.hit_rate.floor,
        100.0 * p.forecast.hit_rate.uniform,
        100.0 * p.forecast.hit_rate.ceiling
    )
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
            "isa": k3_engine::kernels::dispatch::current().isa().name(),
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

fn signed_bytes(h: i128) -> String {
    let magnitude = format_bytes(h.unsigned_abs().min(u64::MAX as u128) as u64);
    if h < 0 {
        format!("−{magnitude}")
    } else {
        format!("+{magnitude}")
    }
}

fn row(r: &Report, e: &Entry) -> String {
    let p = match &e.outcome {
        Err(err) => return format!("{:<12} no plan: {err}", e.name),
        Ok(p) => p,
    };
    let (plan, f) = (&p.plan, &p.forecast);
    let layers = r.subject.footprint.layer_trunk_bytes.len();
    let ring = if plan.ring_slots == 0 {
        "-".to_string()
    } else {
        format!("{}×{}", plan.ring_slots, format_bytes(plan.ring_slot_bytes))
    };
    let headroom = p.headroom().map_or("?".to_string(), signed_bytes);
    let s = &f.seconds_per_token;
    format!(
        "{:<12} {:>6} {:>12} {:>6} {:>10} {:>11} {:>8.2} + {:>6.2} {:>8.2} {:>8.2} {:>7.2} – {:<7.2} {:.2} … {:.2}{}",
        e.name,
        format!("{}/{layers}", plan.pinned_layers),
        ring,
        plan.cache_slots,
        format_bytes(plan.total_bytes),
        headroom,
        f.trunk_bytes as f64 / 1e9,
        f.expert_bytes.uniform / 1e9,
        f.io_seconds.uniform,
        f.compute_seconds,
        s.low,
        s.high,
        s.expected_overlapped,
        s.expected_serial,
        if p.shortfall().is_some() { "  (does NOT fit)" } else { "" }
    )
}

/// The human table.
pub fn table(r: &Report) {
    outln!(
        "{:<12} {:>6} {:>12} {:>6} {:>10} {:>11} {:>17} {:>8} {:>8} {:>17} {}",
        "preset",
        "pinned",
        "ring",
        "slots",
        "peak RSS",
        "headroom",
        "GB/token (t + e)",
        "I/O s",
        "compute",
        "s/token range",
        "expected"
    );
    for e in &r.entries {
        outln!("{}", row(r, e));
    }
    for e in &r.entries {
        if let Ok(p) = &e.outcome {
            if let Some(short) = p.shortfall() {
                outln!("{}: {short}", e.name);
            }
        }
    }
    for note in model_notes(r) {
        outln!("* {note}");
    }
}
