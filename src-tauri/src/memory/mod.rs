//! Settings › Memory: the memory choice (a preset or custom trunk + cache budgets), saved
//! across restarts, previewed as a plan and a forecast before it is applied, and applied
//! between generations through the runtime's replan — no restart, no reload.
//!
//! Owns: [`MemoryChoice`] and the context length, their file (`memory.json`,
//! [`MemoryFile`]), the previews
//! ([`preview`]), and [`MemoryView`], what the Settings page shows.
//! Must not: plan differently from the engine: every figure comes from `k3_plan` on the
//! loaded model's own footprint, the same call the engine's replan makes.
//! Precedence at start: `memory.json` (the user's last choice here) over the setup
//! wizard's preset over `K3_PRESET` (default `auto`).

pub mod preview;

use std::path::Path;

use k3_plan::{Budget, BudgetChoice, Preset};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::ipc::error::IpcError;

/// The settings file's name in the app's data folder.
pub const MEMORY_FILE: &str = "memory.json";

/// What the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum MemoryChoice {
    /// A preset by its engine name: laptop, desktop, workstation, server, max or auto.
    Preset { name: PresetName },
    /// Trunk and cache budgets in bytes.
    Custom {
        #[ts(type = "number")]
        #[serde(rename = "trunkBytes")]
        trunk_bytes: u64,
        #[ts(type = "number")]
        #[serde(rename = "cacheBytes")]
        cache_bytes: u64,
    },
}

/// A preset's name, checked when parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum PresetName {
    Auto,
    Laptop,
    Desktop,
    Workstation,
    Server,
    Max,
}

impl PresetName {
    pub fn preset(self) -> Preset {
        match self {
            PresetName::Auto => Preset::Auto,
            PresetName::Laptop => Preset::Laptop,
            PresetName::Desktop => Preset::Desktop,
            PresetName::Workstation => Preset::Workstation,
            PresetName::Server => Preset::Server,
            PresetName::Max => Preset::Max,
        }
    }

    pub fn of(preset: Preset) -> PresetName {
        match preset {
            Preset::Auto => PresetName::Auto,
            Preset::Laptop => PresetName::Laptop,
            Preset::Desktop => PresetName::Desktop,
            Preset::Workstation => PresetName::Workstation,
            Preset::Server => PresetName::Server,
            Preset::Max => PresetName::Max,
        }
    }

    /// Every preset, `auto` first, then smallest to largest.
    pub const ALL: [PresetName; 6] = [
        PresetName::Auto,
        PresetName::Laptop,
        PresetName::Desktop,
        PresetName::Workstation,
        PresetName::Server,
        PresetName::Max,
    ];
}

impl MemoryChoice {
    pub fn of_preset(preset: Preset) -> MemoryChoice {
        MemoryChoice::Preset { name: PresetName::of(preset) }
    }

    /// The engine's budget for this choice.
    pub fn budget(&self) -> BudgetChoice {
        match *self {
            MemoryChoice::Preset { name } => name.preset().choice(),
            MemoryChoice::Custom { trunk_bytes, cache_bytes } => {
                BudgetChoice::Fixed(Budget { trunk_bytes, cache_bytes })
            }
        }
    }

    /// `laptop`, …, or `custom`.
    pub fn name(&self) -> &'static str {
        match self {
            MemoryChoice::Preset { name } => name.preset().name(),
            MemoryChoice::Custom { .. } => "custom",
        }
    }
}

/// `memory.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFile {
    pub choice: Option<MemoryChoice>,
    /// Positions each conversation's KV cache is reserved for (`None`: `K3_CONTEXT_LENGTH`
    /// or the engine's default).
    #[serde(default)]
    pub context_length: Option<usize>,
}

impl MemoryFile {
    pub fn load(data_dir: &Path) -> MemoryFile {
        crate::json_file::load_or_default(data_dir, MEMORY_FILE)
    }

    pub fn save(&self, data_dir: &Path) -> Result<(), IpcError> {
        crate::json_file::save(data_dir, MEMORY_FILE, self)
    }
}

pub use preview::{MemoryView, PlanPreview};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_round_trip_through_their_file_and_map_to_the_engines_budgets() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(MemoryFile::load(dir.path()), MemoryFile::default(), "no file: no choice");
        let custom = MemoryChoice::Custom { trunk_bytes: 3_000_000, cache_bytes: 40_000 };
        MemoryFile { choice: Some(custom), context_length: Some(8192) }.save(dir.path()).unwrap();
        let loaded = MemoryFile::load(dir.path());
        assert_eq!((loaded.choice, loaded.context_length), (Some(custom), Some(8192)));
        assert_eq!(custom.budget(), BudgetChoice::Fixed(Budget { trunk_bytes: 3_000_000, cache_bytes: 40_000 }));
        let text = std::fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap();
        assert!(text.contains("\"trunkBytes\": 3000000"), "{text}");
        for name in PresetName::ALL {
            let c = MemoryChoice::Preset { name };
            assert_eq!(c.budget(), name.preset().choice());
            assert_eq!(PresetName::of(name.preset()), name);
        }
        let parsed: MemoryChoice = serde_json::from_str(r#"{"kind":"preset","name":"server"}"#).unwrap();
        assert_eq!(parsed.name(), "server");
        assert!(serde_json::from_str::<MemoryChoice>(r#"{"kind":"preset","name":"ultra"}"#).is_err());
    }
}
