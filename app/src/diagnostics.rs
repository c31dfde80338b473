//! Settings › Diagnostics: one plain-text report to paste into a bug report — versions, the
//! machine, the model and its memory plan, the setup state, the local API's state and every
//! environment variable the app and its crates read, with its value.
//!
//! Owns: [`report`] and the list of variables ([`VARIABLES`]).
//! Must not: include anything a person wrote or read: no prompt, reply, conversation title
//! or system prompt, and no secret — `HF_TOKEN` and the API key are shown as set or not,
//! never their value.

use std::fmt::Write;

use k3_runtime::ProbeSnapshot;

use crate::setup::SetupSettings;

/// Every environment variable the app reads (its own and k3-store's), in the order shown.
pub const VARIABLES: &[&str] = &[
    "K3_MODEL_DIR",
    "K3APP_DATA_DIR",
    "K3_CONTEXT_LENGTH",
    "K3_PRESET",
    "K3APP_REPO",
    "K3APP_SPEED_SECONDS",
    "K3APP_SPEED_SCRATCH_MB",
    "OMP_NUM_THREADS",
    "K3_ASYNC_IO_THREADS",
    "K3_REVISION",
    "HF_ENDPOINT",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_TOKEN",
];

/// Variables whose value is a secret: only "set" or "not set" is shown.
const SECRET: &[&str] = &["HF_TOKEN"];

/// What the report is made of.
pub struct DiagnosticsInput<'a> {
    pub probe: &'a ProbeSnapshot,
    pub setup: &'a SetupSettings,
    pub memory_choice: &'a str,
    pub api: &'a str,
    pub data_dir: &'a std::path::Path,
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The report, as text.
pub fn report(i: &DiagnosticsInput<'_>) -> String {
    let mut out = String::new();
    let cpu = k3_store::doctor::cpu::CpuInfo::detect();
    let gb = |b: u64| format!("{:.2} GB", b as f64 / 1e9);
    let _ = writeln!(out, "k3-desktop {} ({})", env!("CARGO_PKG_VERSION"), std::env::consts::OS);
    let _ = writeln!(
        out,
        "cpu: {} · {} · {} threads · {}",
        cpu.model,
        cpu.arch,
        cpu.logical_cores,
        cpu.isa.names().join(" ")
    );
    let _ = writeln!(out, "os: {}", cpu.os);
    let m = &i.probe.machine;
    let _ = writeln!(
        out,
        "memory: {} total, {} available, pressure {}, RSS {}, peak {}",
        gb(m.usable_total_bytes()),
        gb(m.usable_available_bytes()),
        i.probe.memory_pressure.map_or("n/a".into(), |p| p.describe()),
        i.probe.rss_bytes.map_or("n/a".into(), gb),
        i.probe.peak_rss_bytes.map_or("n/a".into(), gb),
    );
    match &i.probe.model {
        Some(s) => {
            let _ =
                writeln!(out, "model: {} at {} ({} layers, demo: {})", s.name, s.path.display(), s.layers, s.is_demo);
            let _ = writeln!(
                out,
                "trunk: {}",
                s.trunk_dir.as_ref().map_or("not packed".into(), |t| t.display().to_string())
            );
            let _ = writeln!(out, "memory choice: {} · context {} positions", i.memory_choice, s.context_length);
            let _ = writeln!(
                out,
                "threads: {} compute, {} expert reads · streamed reads {} MiB × {} in flight",
                s.compute_threads,
                s.io_threads,
                s.read_pattern.request_bytes >> 20,
                s.read_pattern.depth
            );
            if let Some(p) = &s.plan {
                let _ = writeln!(
                    out,
                    "plan: {}/{} layers pinned, {} ring slots, {} expert slots, {} in all",
                    p.pinned_layers,
                    s.layers,
                    p.ring_slots,
                    p.cache_slots,
                    gb(p.total_bytes)
                );
            }
        }
        None => {
            let _ = writeln!(out, "model: none loaded");
        }
    }
    if let Some(f) = &i.probe.model_error {
        let _ = writeln!(out, "last open failed: {}: {}", f.path.display(), f.error);
    }
    let s = i.setup;
    let _ =
        writeln!(out, "setup: step {:?}, repo {}, store {}", s.step, s.repo, s.store_dir.as_deref().unwrap_or("none"));
    if let Some(speed) = &s.speed {
        let _ = writeln!(
            out,
            "speed test: QD1 {:.0} MB/s, QD16 {:.0} MB/s, O_DIRECT {}",
            speed.qd1_mb_per_s, speed.qd16_mb_per_s, speed.direct
        );
    }
    let _ = writeln!(out, "local API: {}", i.api);
    let _ = writeln!(out, "app data: {}", i.data_dir.display());
    let _ = writeln!(out, "environment:");
    for name in VARIABLES {
        let value = match (i.env)(name) {
            None => "(not set)".to_string(),
            Some(_) if SECRET.contains(name) => "(set)".to_string(),
            Some(v) => v,
        };
        let _ = writeln!(out, "  {name}={value}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k3_runtime::Activity;

    #[test]
    fn the_report_lists_every_variable_and_never_a_secret() {
        let probe = ProbeSnapshot {
            model: None,
            model_error: None,
            activity: Activity::Idle,
            queued_jobs: 0,
            stream: None,
            rss_bytes: Some(1),
            peak_rss_bytes: None,
            machine: k3_plan::MachineMemory::new(24_000_000_000, 20_000_000_000),
            memory_pressure: None,
            reads_in_flight: None,
            last_token_seq: 0,
            positions_in_use: 0,
            expert_slots_used: None,
            replies_running: 0,
            batch: k3_engine::BatchCounters::default(),
        };
        let env = |name: &str| match name {
            "HF_TOKEN" => Some("hf_SECRETSECRET".to_string()),
            "K3_PRESET" => Some("laptop".to_string()),
            _ => None,
        };
        let text = report(&DiagnosticsInput {
            probe: &probe,
            setup: &SetupSettings::default(),
            memory_choice: "laptop",
            api: "off",
            data_dir: std::path::Path::new("/data"),
            env: &env,
        });
        assert!(!text.contains("SECRET"), "{text}");
        assert!(
            text.contains("  HF_TOKEN=(set)")
                && text.contains("  K3_PRESET=laptop")
                && text.contains("  HF_HOME=(not set)")
        );
        assert_eq!(VARIABLES.iter().filter(|v| text.contains(&format!("  {v}="))).count(), VARIABLES.len());
        assert!(text.contains("model: none loaded") && text.contains("memory: 24.00 GB total"));
    }
}
