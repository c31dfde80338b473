//! Everything the app reads from its environment, in one place.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `K3_MODEL_DIR` | model folder to open at start instead of the bundled demo |
//! | `K3APP_DATA_DIR` | app data folder (chat history) instead of the platform's app-data folder |
//! | `K3_CONTEXT_LENGTH` | positions of one conversation the memory plan reserves (default: the largest the plan keeps on this machine) |
//! | `K3_PRESET` | memory preset every model is opened with: laptop … max or auto (default auto) |
//! | `K3APP_REPO` | the repository the setup wizard downloads (default `moonshotai/Kimi-K3`) |
//! | `K3APP_SPEED_SECONDS` | seconds per queue depth of the wizard's drive speed test (default 20) |
//! | `K3APP_SPEED_SCRATCH_MB` | size of the speed test's scratch file (default 2048) |
//! | `OMP_NUM_THREADS` | kernel threads when Settings › Performance saved none (default: every core) |
//! | `K3_ASYNC_IO_THREADS` | expert reads in flight when Settings › Performance saved none (default 4) |
//! | `HF_ENDPOINT`, `HF_TOKEN`, `HF_HOME`, `HF_HUB_CACHE`, `K3_REVISION` | the hub, read by k3-store |
//!
//! Owns: resolving the bundled demo model (bundle resources, else the repository's
//! `fixtures/tiny-mxfp4` for builds run from a checkout).

use std::path::{Path, PathBuf};

use k3_io::ReadPattern;
use k3_plan::Preset;

use crate::memory::{MemoryChoice, MemoryFile};
use crate::performance::Threads;
use crate::setup::SetupSettings;
use crate::worker::ModelTarget;

/// The app's options, read once at start.
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub startup_model: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    /// Positions of one conversation the memory plan reserves (`None`: the largest the
    /// plan keeps on this machine, fitted when a model opens).
    pub context_length: Option<usize>,
    /// The memory preset models open with (parsed by `k3_plan`).
    pub preset: Preset,
    /// The repository the setup wizard downloads, when not the released one.
    pub repo: Option<String>,
    pub speed_seconds: f64,
    /// The thread counts the environment asks for (`OMP_NUM_THREADS`, `K3_ASYNC_IO_THREADS`).
    pub threads: Threads,
    /// Remote backends' keys go in the OS keyring when one answers; `K3APP_KEYRING=off`
    /// keeps them in user-only files (tests, or a keyring the user does not want used).
    pub keyring: bool,
}

impl AppOptions {
    pub fn from_env() -> Self {
        let dir = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let context_length = std::env::var("K3_CONTEXT_LENGTH").ok().and_then(|v| v.trim().parse().ok());
        let preset = match std::env::var("K3_PRESET") {
            Ok(name) if !name.trim().is_empty() => Preset::from_name(name.trim()).unwrap_or_else(|e| {
                // Read before the log starts: stderr only.
                eprintln!("k3-desktop: K3_PRESET: {e}; using auto");
                Preset::Auto
            }),
            _ => Preset::Auto,
        };
        let repo = std::env::var("K3APP_REPO").ok().filter(|r| !r.trim().is_empty());
        let speed_seconds = std::env::var("K3APP_SPEED_SECONDS")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 600.0)
            .unwrap_or(20.0);
        AppOptions {
            startup_model: dir("K3_MODEL_DIR"),
            data_dir: dir("K3APP_DATA_DIR"),
            context_length,
            preset,
            repo,
            speed_seconds,
            threads: Threads::from_env(&|name| std::env::var(name).ok()),
            keyring: std::env::var("K3APP_KEYRING").map_or(true, |v| v.trim() != "off"),
        }
    }
}

/// The demo model shipped in the repository (used when no bundle resource is present).
pub const REPO_DEMO_MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/k3-demo");

/// The bundled demo: `resource_dir/demo-model` when installed, else the repository copy.
pub fn demo_model(resource_dir: Option<&Path>) -> ModelTarget {
    let bundled = resource_dir.map(|d| d.join("demo-model")).filter(|d| d.join("config.json").is_file());
    ModelTarget::folder(bundled.unwrap_or_else(|| PathBuf::from(REPO_DEMO_MODEL)), true)
}

/// The model the app opens at start: `K3_MODEL_DIR`, else the model the setup wizard
/// finished with (its store, trunk and preset), else the bundled demo.
pub fn startup_model(
    options: &AppOptions,
    resource_dir: Option<&Path>,
    setup: &SetupSettings,
    saved: &MemoryFile,
) -> ModelTarget {
    let chosen = saved.choice;
    let memory = chosen.unwrap_or(MemoryChoice::of_preset(options.preset));
    let base = ModelTarget {
        context_length: options.context_length,
        budget: memory.budget(),
        residency: saved.residency_rule(),
        ..demo_model(resource_dir)
    };
    if let Some(path) = &options.startup_model {
        return ModelTarget { path: path.clone(), is_demo: false, trunk: packed_trunk_of(path), ..base };
    }
    match (&setup.step, &setup.store_dir) {
        (crate::setup::SetupStep::Ready, Some(store)) => ModelTarget {
            path: PathBuf::from(store),
            is_demo: false,
            trunk: setup.trunk_path(),
            read_pattern: setup.speed.map_or(ReadPattern::DEFAULT, |s| s.engine_pattern()),
            budget: chosen.map_or_else(
                || setup.preset.as_deref().and_then(|p| Preset::from_name(p).ok()).unwrap_or(options.preset).choice(),
                |c| c.budget(),
            ),
            ..base
        },
        _ => base,
    }
}

/// The packed trunk the setup wizard writes beside a store (`<folder>/.k3-desktop/trunk`),
/// when that folder has one: a folder opened by path streams its trunk from there.
pub fn packed_trunk_of(folder: &Path) -> Option<PathBuf> {
    let trunk = k3_store::download::layout::StoreLayout::new(folder).default_trunk();
    trunk.join("trunk.json").is_file().then_some(trunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::{PatternSummary, SetupStep, SpeedSummary};

    fn options() -> AppOptions {
        AppOptions {
            startup_model: None,
            data_dir: None,
            context_length: Some(4096),
            preset: Preset::Auto,
            repo: None,
            speed_seconds: 1.0,
            threads: Threads::default(),
            keyring: false,
        }
    }

    #[test]
    fn the_finished_setup_opens_its_store_with_the_speed_tests_read_pattern() {
        let speed = SpeedSummary {
            qd1_mb_per_s: 900.0,
            qd16_mb_per_s: 1600.0,
            qd1_experts_per_s: 51.0,
            qd16_experts_per_s: 91.0,
            direct: true,
            read_pattern: Some(PatternSummary { request_bytes: 32 << 20, depth: 8, mb_per_s: 2100.0 }),
        };
        let setup = SetupSettings {
            step: SetupStep::Ready,
            store_dir: Some("/models/k3".into()),
            preset: Some("laptop".into()),
            speed: Some(speed),
            ..SetupSettings::default()
        };
        let target = startup_model(&options(), None, &setup, &MemoryFile::default());
        assert_eq!(target.path, PathBuf::from("/models/k3"));
        assert_eq!(target.budget, Preset::Laptop.choice());
        let memory = target.request(Threads::default()).options.memory;
        assert_eq!(memory.read_pattern, ReadPattern { request_bytes: 32 << 20, depth: 8 });
        assert_eq!(memory.trunk_dir, Some(PathBuf::from("/models/k3/.k3-desktop/trunk")));

        // Settings from before the pattern was measured, and the demo: the engine's default.
        let old = SetupSettings { speed: Some(SpeedSummary { read_pattern: None, ..speed }), ..setup };
        assert_eq!(
            startup_model(&options(), None, &old, &MemoryFile::default())
                .request(Threads::default())
                .options
                .memory
                .read_pattern,
            ReadPattern::DEFAULT
        );
        let demo = startup_model(&options(), None, &SetupSettings::default(), &MemoryFile::default());
        assert!(demo.is_demo);
        assert_eq!(demo.request(Threads::default()).options.memory.read_pattern, ReadPattern::DEFAULT);
    }
}
