//! Everything the app reads from its environment, in one place.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `K3_MODEL_DIR` | model folder to open at start instead of the bundled demo |
//! | `K3APP_DATA_DIR` | app data folder (chat history) instead of the platform's app-data folder |
//! | `K3_CONTEXT_LENGTH` | positions of one conversation the memory plan reserves (default 4096) |
//!
//! Owns: resolving the bundled demo model (bundle resources, else the repository's
//! `fixtures/tiny-mxfp4` for builds run from a checkout).

use std::path::{Path, PathBuf};

use crate::worker::ModelTarget;

/// The app's options, read once at start.
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub startup_model: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    /// Positions of one conversation the memory plan reserves.
    pub context_length: usize,
}

impl AppOptions {
    pub fn from_env() -> Self {
        let dir = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let context_length = std::env::var("K3_CONTEXT_LENGTH")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(k3_engine::DEFAULT_CONTEXT_LENGTH);
        AppOptions { startup_model: dir("K3_MODEL_DIR"), data_dir: dir("K3APP_DATA_DIR"), context_length }
    }
}

/// The demo model shipped in the repository (used when no bundle resource is present).
pub const REPO_DEMO_MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/tiny-mxfp4");

/// The bundled demo: `resource_dir/demo-model` when installed, else the repository copy.
pub fn demo_model(resource_dir: Option<&Path>) -> ModelTarget {
    let bundled = resource_dir.map(|d| d.join("demo-model")).filter(|d| d.join("config.json").is_file());
    ModelTarget::folder(bundled.unwrap_or_else(|| PathBuf::from(REPO_DEMO_MODEL)), true)
}

/// The model the app opens at start.
pub fn startup_model(options: &AppOptions, resource_dir: Option<&Path>) -> ModelTarget {
    let target = match &options.startup_model {
        Some(path) => ModelTarget::folder(path, false),
        None => demo_model(resource_dir),
    };
    ModelTarget { context_length: options.context_length, ..target }
}
