//! How `k3 forecast` prints without `--json`: a table, a row per preset, and the
//! assumptions under it. Every figure comes from the [`Report`]; nothing is computed here
//! but units.

use k3_plan::format_bytes;

use super::forecast_notes::model_notes;
use super::forecast_report::{Entry, Report};

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
