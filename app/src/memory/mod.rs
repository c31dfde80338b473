//! Settings › Memory: the memory choice (a preset or custom trunk + cache budgets) and how
//! the trunk's layers are placed under it, saved across restarts, previewed as a plan and a
//! forecast before it is applied, and applied between generations through the runtime's
//! replan — no restart, no reload.
//!
//! Owns: [`MemoryChoice`], [`Placement`] (the longest prefix pinned, or each layer placed
//! by measured cost with the rates it was planned with, [`SavedCostRates`]) and the context
//! length, their file (`memory.json`, [`MemoryFile`]), the previews ([`preview`]), and
//! [`MemoryView`], what the Settings page shows.
//! Must not: plan differently from the engine: every figure comes from `k3_plan` on the
//! loaded model's own footprint, the same call the engine's replan makes.
//! Precedence at start: `memory.json` (the user's last choice here) over the setup
//! wizard's preset over `K3_PRESET` (default `auto`).

pub mod preview;
mod record;

use k3_plan::{Budget, BudgetChoice, ComputeRates, CostRates, DiskRates, Preset, ResidencyRule};
use serde::{Deserialize, Serialize};

use crate::settings::records::MemoryRecord;
use crate::settings::{Settings, SettingsRecord};

use crate::error::AppError;
use crate::worker::ModelTarget;

/// The settings file's name in the app's data folder.
pub const MEMORY_FILE: &str = <MemoryRecord as SettingsRecord>::FILE;

/// What the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryChoice {
    /// A preset by its engine name: ultra, laptop, desktop, workstation, server, max or auto.
    Preset { name: PresetName },
    /// Trunk and cache budgets in bytes.
    Custom { trunk_bytes: u64, cache_bytes: u64 },
}

/// A preset's name, checked when parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresetName {
    Auto,
    Ultra,
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
            PresetName::Ultra => Preset::Ultra,
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
            Preset::Ultra => PresetName::Ultra,
            Preset::Laptop => PresetName::Laptop,
            Preset::Desktop => PresetName::Desktop,
            Preset::Workstation => PresetName::Workstation,
            Preset::Server => PresetName::Server,
            Preset::Max => PresetName::Max,
        }
    }

    /// Every preset, `auto` first, then smallest to largest.
    pub const ALL: [PresetName; 7] = [
        PresetName::Auto,
        PresetName::Ultra,
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

/// How a plan places the trunk's layers under the budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Placement {
    /// The longest prefix of layers that fits is pinned; the rest stream.
    #[default]
    Prefix,
    /// Each layer pinned, held coded or streamed, and the trunk/cache split, by the fewest
    /// seconds per token at this machine's measured rates (`k3_plan::plan_by_cost`).
    Cost,
}

impl SavedCostRates {
    /// The first rate that is not a positive number, by its name in `memory.json` (a
    /// hand-edited file): the planner would refuse it, and the model would not open.
    pub fn invalid_rate(&self) -> Option<(&'static str, f64)> {
        [
            ("diskTrunkBytesPerSecond", self.disk_trunk_bytes_per_second),
            ("diskExpertBytesPerSecond", self.disk_expert_bytes_per_second),
            ("bf16BytesPerSecond", self.bf16_bytes_per_second),
            ("expertBytesPerSecond", self.expert_bytes_per_second),
            ("decodeBytesPerSecond", self.decode_bytes_per_second),
        ]
        .into_iter()
        .find(|(_, v)| !(v.is_finite() && *v > 0.0))
    }
}

/// The rates a placement by cost was planned with, bytes per second: the speed test's drive
/// rate and the CPU's measured kernel and trunk-decoder rates. Saved with the choice so a
/// restart places the layers the same way without measuring again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedCostRates {
    pub disk_trunk_bytes_per_second: f64,
    pub disk_expert_bytes_per_second: f64,
    pub bf16_bytes_per_second: f64,
    pub expert_bytes_per_second: f64,
    pub decode_bytes_per_second: f64,
}

impl From<CostRates> for SavedCostRates {
    fn from(r: CostRates) -> Self {
        SavedCostRates {
            disk_trunk_bytes_per_second: r.disk.trunk_bytes_per_second,
            disk_expert_bytes_per_second: r.disk.expert_bytes_per_second,
            bf16_bytes_per_second: r.compute.bf16_bytes_per_second,
            expert_bytes_per_second: r.compute.expert_bytes_per_second,
            decode_bytes_per_second: r.decode_bytes_per_second,
        }
    }
}

impl From<SavedCostRates> for CostRates {
    fn from(r: SavedCostRates) -> Self {
        CostRates {
            disk: DiskRates {
                trunk_bytes_per_second: r.disk_trunk_bytes_per_second,
                expert_bytes_per_second: r.disk_expert_bytes_per_second,
            },
            compute: ComputeRates {
                bf16_bytes_per_second: r.bf16_bytes_per_second,
                expert_bytes_per_second: r.expert_bytes_per_second,
            },
            decode_bytes_per_second: r.decode_bytes_per_second,
        }
    }
}

/// What models open with: the choice, the context length and the placement rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemorySetting {
    pub choice: MemoryChoice,
    /// Positions each conversation may hold (`None`: the largest the plan keeps on this
    /// machine, fitted when a model opens).
    pub context_length: Option<usize>,
    pub residency: ResidencyRule,
}

impl MemorySetting {
    /// `target` opened under this setting: its budget, context length and placement.
    pub fn applied_to(&self, target: ModelTarget) -> ModelTarget {
        ModelTarget {
            budget: self.choice.budget(),
            context_length: self.context_length,
            residency: self.residency,
            ..target
        }
    }

    pub fn placement(&self) -> Placement {
        match self.residency {
            ResidencyRule::Prefix => Placement::Prefix,
            ResidencyRule::ByCost(_) => Placement::Cost,
        }
    }
}

/// What `memory.json` holds (its record is `k3_app`'s `MemoryRecord`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryFile {
    pub choice: Option<MemoryChoice>,
    /// Positions each conversation's KV cache is reserved for (`None`: `K3_CONTEXT_LENGTH`,
    /// else the largest the plan keeps on this machine).
    pub context_length: Option<usize>,
    /// Absent in files written before placement could be chosen: the prefix.
    pub placement: Placement,
    /// The rates of a placement by cost (without them, the prefix is used).
    pub cost_rates: Option<SavedCostRates>,
}

impl MemoryFile {
    pub fn load(settings: &Settings) -> MemoryFile {
        settings.get::<MemoryRecord>().into()
    }

    /// The file for `setting`.
    pub fn of(setting: &MemorySetting) -> MemoryFile {
        let cost_rates = match setting.residency {
            ResidencyRule::Prefix => None,
            ResidencyRule::ByCost(rates) => Some(rates.into()),
        };
        MemoryFile {
            choice: Some(setting.choice),
            context_length: setting.context_length,
            placement: setting.placement(),
            cost_rates,
        }
    }

    /// The residency rule saved: by cost only with the rates it was chosen with, each a
    /// positive number (otherwise the prefix, with a warning naming the field, so a damaged
    /// file cannot keep the model from opening).
    pub fn residency_rule(&self) -> ResidencyRule {
        match (self.placement, self.cost_rates) {
            (Placement::Cost, Some(rates)) => match rates.invalid_rate() {
                None => ResidencyRule::ByCost(rates.into()),
                Some((field, value)) => {
                    log::warn!(
                        "{MEMORY_FILE}: costRates.{field} is {value}, not a positive rate; placing by the prefix"
                    );
                    ResidencyRule::Prefix
                }
            },
            (Placement::Cost, None) | (Placement::Prefix, _) => ResidencyRule::Prefix,
        }
    }

    pub fn save(&self, settings: &Settings) -> Result<(), AppError> {
        Ok(settings.set(MemoryRecord::from(self))?)
    }
}

pub use preview::{MemoryView, PlanPreview};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_round_trip_through_their_file_and_map_to_the_engines_budgets() {
        let dir = tempfile::tempdir().unwrap();
        let settings = || Settings::open(dir.path());
        assert_eq!(MemoryFile::load(&settings()), MemoryFile::default(), "no file: no choice");
        let custom = MemoryChoice::Custom { trunk_bytes: 3_000_000, cache_bytes: 40_000 };
        MemoryFile { choice: Some(custom), context_length: Some(8192), ..MemoryFile::default() }
            .save(&settings())
            .unwrap();
        let loaded = MemoryFile::load(&settings());
        assert_eq!((loaded.choice, loaded.context_length), (Some(custom), Some(8192)));
        assert_eq!(custom.budget(), BudgetChoice::Fixed(Budget { trunk_bytes: 3_000_000, cache_bytes: 40_000 }));
        let text = std::fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap();
        assert!(text.contains("\"trunkBytes\": 3000000"), "{text}");
        for name in PresetName::ALL {
            let c = MemoryChoice::Preset { name };
            assert_eq!(c.budget(), name.preset().choice());
            assert_eq!(PresetName::of(name.preset()), name);
        }
    }

    fn rates() -> CostRates {
        CostRates {
            disk: DiskRates { trunk_bytes_per_second: 2.8e9, expert_bytes_per_second: 1.9e9 },
            compute: ComputeRates { bf16_bytes_per_second: 7.5e9, expert_bytes_per_second: 3.25e9 },
            decode_bytes_per_second: 4.5e9,
        }
    }

    #[test]
    fn a_placement_by_cost_is_saved_with_its_rates_and_restored_as_the_same_rule() {
        let dir = tempfile::tempdir().unwrap();
        let settings = || Settings::open(dir.path());
        let choice = MemoryChoice::of_preset(Preset::Laptop);
        let setting = MemorySetting { choice, context_length: Some(4096), residency: ResidencyRule::ByCost(rates()) };
        MemoryFile::of(&setting).save(&settings()).unwrap();
        let loaded = MemoryFile::load(&settings());
        assert_eq!(loaded.placement, Placement::Cost);
        assert_eq!(loaded.residency_rule(), ResidencyRule::ByCost(rates()), "every rate comes back exactly");
        let text = std::fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap();
        assert!(text.contains("\"placement\": \"cost\"") && text.contains("\"decodeBytesPerSecond\""), "{text}");

        let prefix = MemorySetting { residency: ResidencyRule::Prefix, ..setting };
        MemoryFile::of(&prefix).save(&settings()).unwrap();
        let loaded = MemoryFile::load(&settings());
        assert_eq!(
            (loaded.placement, loaded.cost_rates, loaded.residency_rule()),
            (Placement::Prefix, None, ResidencyRule::Prefix)
        );
    }

    #[test]
    fn an_older_file_or_a_cost_placement_without_rates_plans_by_the_prefix() {
        let file = |text: &str| MemoryFile::from(serde_json::from_str::<MemoryRecord>(text).unwrap());
        let old = file(r#"{"choice":{"kind":"preset","name":"laptop"},"contextLength":4096}"#);
        assert_eq!((old.placement, old.residency_rule()), (Placement::Prefix, ResidencyRule::Prefix));
        let no_rates = file(r#"{"choice":null,"placement":"cost"}"#);
        assert_eq!(no_rates.residency_rule(), ResidencyRule::Prefix);
    }

    #[test]
    fn saved_rates_that_are_not_positive_are_named_and_plan_by_the_prefix() {
        let good = SavedCostRates::from(rates());
        assert_eq!(good.invalid_rate(), None);
        let bad = SavedCostRates { decode_bytes_per_second: 0.0, ..good };
        assert_eq!(bad.invalid_rate(), Some(("decodeBytesPerSecond", 0.0)));
        let negative = SavedCostRates { disk_trunk_bytes_per_second: -1.0, ..good };
        assert_eq!(negative.invalid_rate(), Some(("diskTrunkBytesPerSecond", -1.0)));
        let file = MemoryFile { placement: Placement::Cost, cost_rates: Some(bad), ..MemoryFile::default() };
        assert_eq!(file.residency_rule(), ResidencyRule::Prefix);
        let file = MemoryFile { cost_rates: Some(good), ..file };
        assert_eq!(file.residency_rule(), ResidencyRule::ByCost(rates()));
    }
}
