//! `memory.json`'s record (`crate::settings::records::MemoryRecord`) and the window's memory
//! types, converted both ways: the file keeps its field names whatever the window's types
//! are called.

use crate::settings::records::{CostRatesRecord, MemoryChoiceRecord, MemoryRecord, PlacementRecord, PresetRecord};

use super::{MemoryChoice, MemoryFile, Placement, PresetName, SavedCostRates};

impl From<PresetRecord> for PresetName {
    fn from(p: PresetRecord) -> Self {
        match p {
            PresetRecord::Auto => PresetName::Auto,
            PresetRecord::Ultra => PresetName::Ultra,
            PresetRecord::Laptop => PresetName::Laptop,
            PresetRecord::Desktop => PresetName::Desktop,
            PresetRecord::Workstation => PresetName::Workstation,
            PresetRecord::Server => PresetName::Server,
            PresetRecord::Max => PresetName::Max,
        }
    }
}

impl From<PresetName> for PresetRecord {
    fn from(p: PresetName) -> Self {
        match p {
            PresetName::Auto => PresetRecord::Auto,
            PresetName::Ultra => PresetRecord::Ultra,
            PresetName::Laptop => PresetRecord::Laptop,
            PresetName::Desktop => PresetRecord::Desktop,
            PresetName::Workstation => PresetRecord::Workstation,
            PresetName::Server => PresetRecord::Server,
            PresetName::Max => PresetRecord::Max,
        }
    }
}

impl From<MemoryChoiceRecord> for MemoryChoice {
    fn from(c: MemoryChoiceRecord) -> Self {
        match c {
            MemoryChoiceRecord::Preset { name } => MemoryChoice::Preset { name: name.into() },
            MemoryChoiceRecord::Custom { trunk_bytes, cache_bytes } => {
                MemoryChoice::Custom { trunk_bytes, cache_bytes }
            }
        }
    }
}

impl From<MemoryChoice> for MemoryChoiceRecord {
    fn from(c: MemoryChoice) -> Self {
        match c {
            MemoryChoice::Preset { name } => MemoryChoiceRecord::Preset { name: name.into() },
            MemoryChoice::Custom { trunk_bytes, cache_bytes } => {
                MemoryChoiceRecord::Custom { trunk_bytes, cache_bytes }
            }
        }
    }
}

fn placement(p: PlacementRecord) -> Placement {
    match p {
        PlacementRecord::Prefix => Placement::Prefix,
        PlacementRecord::Cost => Placement::Cost,
    }
}

fn placement_record(p: Placement) -> PlacementRecord {
    match p {
        Placement::Prefix => PlacementRecord::Prefix,
        Placement::Cost => PlacementRecord::Cost,
    }
}

impl From<CostRatesRecord> for SavedCostRates {
    fn from(r: CostRatesRecord) -> Self {
        SavedCostRates {
            disk_trunk_bytes_per_second: r.disk_trunk_bytes_per_second,
            disk_expert_bytes_per_second: r.disk_expert_bytes_per_second,
            bf16_bytes_per_second: r.bf16_bytes_per_second,
            expert_bytes_per_second: r.expert_bytes_per_second,
            decode_bytes_per_second: r.decode_bytes_per_second,
        }
    }
}

impl From<SavedCostRates> for CostRatesRecord {
    fn from(r: SavedCostRates) -> Self {
        CostRatesRecord {
            disk_trunk_bytes_per_second: r.disk_trunk_bytes_per_second,
            disk_expert_bytes_per_second: r.disk_expert_bytes_per_second,
            bf16_bytes_per_second: r.bf16_bytes_per_second,
            expert_bytes_per_second: r.expert_bytes_per_second,
            decode_bytes_per_second: r.decode_bytes_per_second,
        }
    }
}

impl From<MemoryRecord> for MemoryFile {
    fn from(r: MemoryRecord) -> Self {
        MemoryFile {
            choice: r.choice.map(Into::into),
            context_length: r.context_length,
            placement: placement(r.placement),
            cost_rates: r.cost_rates.map(Into::into),
        }
    }
}

impl From<&MemoryFile> for MemoryRecord {
    fn from(f: &MemoryFile) -> Self {
        MemoryRecord {
            choice: f.choice.map(Into::into),
            context_length: f.context_length,
            placement: placement_record(f.placement),
            cost_rates: f.cost_rates.map(Into::into),
        }
    }
}
