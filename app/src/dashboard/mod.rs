//! The Memory and Disk tabs' data: one reading of the runtime's probe as the dashboards'
//! DTOs, the per-token samples the page has not seen yet, and the memory-pressure guard.
//!
//! Owns: [`Dashboard`] and its parts ([`MemoryPart`] — the plan's breakdown — ,
//! [`TokenPoint`], [`SystemMemory`], [`ActivityView`]), [`read`], and the guard
//! ([`pressure`]); the Disk tab's space per drive is [`disk`].
//! Must not: poll on its own. The page asks (at most twice a second, only while a
//! dashboard is on screen), so nothing is measured when no window shows it.
//! Definitions (PRODUCT.md §1.3): compute = wall − I/O wait, where the waits are measured
//! at the compute thread's wait points; bytes are what was read from disk for that token.

pub mod disk;
pub mod pressure;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k3_runtime::{Activity, ModelSummary, ProbeSnapshot, TokenSample};

use pressure::{assess, PressureInput, PressureWarning};

/// One reading for the dashboards.
#[derive(Debug, Clone, PartialEq)]
pub struct Dashboard {
    /// Wall-clock time of the reading, in seconds since the Unix epoch (the charts' x).
    pub at_seconds: f64,
    pub activity: ActivityView,
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    /// The plan's total (trunk + cache budgets as planned + fixed overhead); `None` when
    /// every weight is resident.
    pub plan_bytes: Option<u64>,
    /// Where the plan's bytes go, largest parts first as the plan lists them.
    pub breakdown: Vec<MemoryPart>,
    pub pinned_layers: u32,
    pub layers: u32,
    pub system: SystemMemory,
    /// Bytes read from disk since the model was loaded (the page differentiates them).
    pub trunk_bytes_read: u64,
    pub expert_bytes_read: u64,
    pub reads_in_flight: Option<u64>,
    /// Tokens after the `after` the page asked with, oldest first.
    pub tokens: Vec<TokenPoint>,
    /// Ask with this next time.
    pub last_seq: u64,
    pub pressure: Option<PressureWarning>,
}

/// What the engine is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum ActivityView {
    Idle,
    Opening { layers_done: u32, layers_total: u32 },
    Generating { tokens: u32 },
    Replanning { layers_done: u32, layers_total: u32 },
}

/// One part of the memory plan.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPart {
    /// Stable key for colours and tests: pinned, ring, experts, io, embed, state, kv, scratch.
    pub key: String,
    pub label: String,
    pub bytes: u64,
    pub detail: String,
}

/// The machine's memory and its pressure as the system measures it.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemMemory {
    pub total_bytes: u64,
    pub available_bytes: u64,
    /// PSI `some avg10` in percent; `None` where the kernel has no PSI (macOS, Windows).
    pub pressure_avg10: Option<f64>,
    /// The system's own pressure reading in words (PSI, macOS's level, Windows' commit
    /// charge); `None` where it says nothing.
    pub pressure: Option<String>,
    /// The system says memory is short (`MemoryPressure::is_high`).
    pub pressure_high: bool,
}

/// One generated token on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenPoint {
    pub seq: u64,
    pub job: u64,
    pub index: u32,
    /// Index 0 carries the prompt's prefill: shown apart.
    pub prefill: bool,
    pub wall_ms: f64,
    pub trunk_wait_ms: f64,
    pub expert_wait_ms: f64,
    /// Wall − (trunk wait + expert wait).
    pub compute_ms: f64,
    pub trunk_bytes: u64,
    pub expert_bytes: u64,
    pub expert_requests: u64,
    pub true_hits: u64,
    pub prefetch_hits: u64,
    pub misses: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl From<&TokenSample> for TokenPoint {
    fn from(s: &TokenSample) -> Self {
        let m = &s.metrics;
        TokenPoint {
            seq: s.seq,
            job: s.job,
            index: s.index as u32,
            prefill: s.index == 0,
            wall_ms: ms(s.wall),
            trunk_wait_ms: ms(m.trunk_wait),
            expert_wait_ms: ms(m.expert_wait),
            compute_ms: ms(s.compute()),
            // The head and embedding rows read when used count with the trunk's reads, as
            // in the forecast and the reply's bytes read.
            trunk_bytes: m.trunk_bytes_read + m.vocab_bytes_read,
            expert_bytes: m.expert_bytes_read,
            expert_requests: m.expert_requests,
            true_hits: m.expert_true_hits,
            prefetch_hits: m.expert_prefetch_hits,
            misses: m.expert_misses,
        }
    }
}

/// The dashboards' reading now, with the samples after `after`.
pub fn read(now: &ProbeSnapshot, samples: &[TokenSample]) -> Dashboard {
    let model = now.model.as_ref();
    let plan = model.and_then(|m| m.plan.as_ref());
    let stream = now.stream.unwrap_or_default();
    let pressure = match (model, plan) {
        (Some(m), Some(p)) => assess(&PressureInput {
            machine: now.machine,
            pressure: now.memory_pressure,
            rss_bytes: now.rss_bytes.unwrap_or(0),
            plan_bytes: p.total_bytes,
            footprint: &m.footprint,
            streamed_trunk: m.streams_trunk(),
            context_length: m.context_length as u64,
            io_threads: m.io_threads as u64,
        }),
        _ => None,
    };
    Dashboard {
        at_seconds: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
        activity: activity_view(&now.activity),
        rss_bytes: now.rss_bytes,
        peak_rss_bytes: now.peak_rss_bytes,
        plan_bytes: plan.map(|p| p.total_bytes),
        breakdown: model.map(|m| breakdown(m, now.expert_slots_used, now.positions_in_use)).unwrap_or_default(),
        pinned_layers: plan.map_or(model.map_or(0, |m| m.layers), |p| p.pinned_layers) as u32,
        layers: model.map_or(0, |m| m.layers) as u32,
        system: SystemMemory {
            total_bytes: now.machine.usable_total_bytes(),
            available_bytes: now.machine.usable_available_bytes(),
            pressure_avg10: now.memory_pressure.and_then(|p| p.stall_percent()),
            pressure: now.memory_pressure.map(|p| p.describe()),
            pressure_high: now.memory_pressure.is_some_and(|p| p.is_high()),
        },
        // With the head and embedding rows a streaming plan reads when used, as per token.
        trunk_bytes_read: stream.trunk_bytes_read + stream.vocab_bytes_read,
        expert_bytes_read: stream.expert_bytes_read,
        reads_in_flight: now.reads_in_flight,
        tokens: samples.iter().map(TokenPoint::from).collect(),
        last_seq: now.last_token_seq.max(samples.last().map_or(0, |s| s.seq)),
        pressure,
    }
}

fn activity_view(a: &Activity) -> ActivityView {
    match a {
        Activity::Idle => ActivityView::Idle,
        Activity::Opening { layers_done, layers_total, .. } => {
            ActivityView::Opening { layers_done: *layers_done as u32, layers_total: *layers_total as u32 }
        }
        Activity::Generating { tokens, .. } => ActivityView::Generating { tokens: *tokens as u32 },
        Activity::Replanning { layers_done, layers_total } => {
            ActivityView::Replanning { layers_done: *layers_done as u32, layers_total: *layers_total as u32 }
        }
    }
}

/// The plan's parts (with the expert slots and KV positions in use); with every weight
/// resident, the checkpoint and the fixed parts.
pub fn breakdown(m: &ModelSummary, slots_used: Option<u64>, positions_used: usize) -> Vec<MemoryPart> {
    let fp = &m.footprint;
    let part = |key: &str, label: &str, bytes: u64, detail: String| MemoryPart {
        key: key.into(),
        label: label.into(),
        bytes,
        detail,
    };
    let gb = k3_plan::format_bytes;
    let mut parts = match &m.plan {
        Some(p) => vec![
            part("pinned", "Pinned trunk", p.pinned_bytes, format!("{}/{} layers", p.pinned_layers, m.layers)),
            part(
                "ring",
                "Ring slots",
                p.trunk_bytes - p.pinned_bytes,
                format!("{} × {}", p.ring_slots, gb(p.ring_slot_bytes)),
            ),
            part(
                "experts",
                "Expert slots",
                p.cache_bytes,
                format!("{} of {} in use × {}", slots_used.unwrap_or(0), p.cache_slots, gb(p.cache_slot_bytes)),
            ),
            part("io", "I/O buffers", p.io_buffer_bytes, format!("{} reads", m.io_threads)),
        ],
        None => vec![part(
            "pinned",
            "All weights",
            fp.trunk_total_bytes().saturating_add(fp.expert_bytes.saturating_mul(fp.n_experts_total)),
            format!("{}/{} layers and every expert", m.layers, m.layers),
        )],
    };
    let positions = m.context_length as u64;
    parts.extend([
        match m.plan.as_ref().map(|p| p.vocab) {
            Some(k3_plan::VocabPlacement::Read) => part(
                "embed",
                "Embeddings + head",
                k3_plan::model_level_bytes(fp, k3_plan::VocabPlacement::Read),
                "read from the checkpoint when used".into(),
            ),
            _ => part("embed", "Embeddings + head", fp.resident_bytes, String::new()),
        },
        part("state", "Recurrent state", fp.state_bytes, String::new()),
        part(
            "kv",
            "KV cache",
            fp.kv_bytes(positions),
            format!("{} × {positions} positions reserved, {positions_used} in use", gb(fp.kv_bytes_per_position)),
        ),
        match &m.plan {
            Some(p) => part("scratch", "Scratch", p.scratch_bytes, format!("{}-token prefill chunks", p.prefill_chunk)),
            None => part("scratch", "Scratch", fp.scratch_bytes, String::new()),
        },
    ]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use k3_plan::{plan_memory, BudgetChoice, MachineMemory, MemoryRequest, Preset, GB};

    #[test]
    fn the_breakdown_adds_up_to_the_plan() {
        let fp = k3_plan::released_footprint();
        let req = MemoryRequest {
            choice: Preset::Server.choice(),
            streamed_trunk: true,
            context_length: 4096,
            io_threads: 4,
        };
        let plan = plan_memory(&fp, &req, MachineMemory::new(256 * GB, 200 * GB), false).unwrap();
        let summary = ModelSummary {
            path: "/m".into(),
            name: "K3".into(),
            is_demo: false,
            layers: fp.layer_trunk_bytes.len(),
            hidden_size: 0,
            vocab_size: 0,
            routed_experts: 0,
            experts_per_token: 0,
            checkpoint_bytes: 0,
            budget: Some(BudgetChoice::Auto),
            plan: Some(plan.clone()),
            context_length: 4096,
            load_time: Duration::ZERO,
            footprint: fp,
            trunk_dir: Some("/t".into()),
            io_threads: 4,
            compute_threads: 2,
            read_pattern: k3_io::ReadPattern::DEFAULT,
            residency: k3_plan::ResidencyRule::Prefix,
        };
        let parts = breakdown(&summary, Some(7), 120);
        assert_eq!(parts.iter().map(|p| p.bytes).sum::<u64>(), plan.total_bytes);
        assert_eq!(parts[0].detail, format!("{}/93 layers", plan.pinned_layers));
        assert!(parts[2].detail.starts_with(&format!("7 of {} in use", plan.cache_slots)), "{}", parts[2].detail);
        assert!(parts.iter().any(|p| p.key == "kv" && p.detail.ends_with("4096 positions reserved, 120 in use")));
    }
}
