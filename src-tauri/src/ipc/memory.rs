//! Settings › Memory's wire types: the choice, its preview and the page's view (twins of
//! `k3_app::memory`').

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use k3_plan_wasm::dto::{FootprintJson, MachineJson, RatesJson};

use crate::ipc::dto::ModelInfo;
use crate::ipc::twin::{wire_enum, wire_struct, wire_tagged};

wire_tagged! {
    /// What the user chose.
    #[serde(tag = "kind", rename_all = "camelCase")]
    pub enum MemoryChoice both ways k3_app::memory::MemoryChoice {
        /// A preset by its engine name: ultra, laptop, desktop, workstation, server, max or auto.
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

}

wire_enum! {
    /// A preset's name, checked when parsed.
    #[serde(rename_all = "lowercase")]
    pub enum PresetName from k3_app::memory::PresetName {
        Auto,
        Ultra,
        Laptop,
        Desktop,
        Workstation,
        Server,
        Max,
    }
}

wire_enum! {
    /// How a plan places the trunk's layers under the budget.
    #[serde(rename_all = "camelCase")]
    pub enum Placement from k3_app::memory::Placement {
        /// The longest prefix of layers that fits is pinned; the rest stream.
        Prefix,
        /// Each layer pinned, held coded or streamed, and the trunk/cache split, by the fewest
        /// seconds per token at this machine's measured rates (`k3_plan::plan_by_cost`).
        Cost,
    }
}

wire_struct! {
    /// One choice's plan on this machine.
    pub struct PlanPreview both ways k3_app::memory::preview::PlanPreview {
        choice: MemoryChoice,
        /// The planner's refusal, when it refuses (then the numbers are 0).
        problem: Option<String>,
        pinned_layers: u32,
        layers: u32,
        ring_slots: u32,
        #[ts(type = "number")]
        trunk_bytes: u64,
        #[ts(type = "number")]
        expert_slots: u64,
        #[ts(type = "number")]
        cache_bytes: u64,
        #[ts(type = "number")]
        total_bytes: u64,
        /// Available memory (with this model's current plan given back) minus this plan.
        headroom_bytes: f64,
        /// Headroom below the `auto` reserve (2 GB + 2 % of available): warned about.
        tight: bool,
        /// Seconds per token `[low, high]` from `k3_plan::forecast`; `None` without a speed test.
        seconds_low: Option<f64>,
        seconds_high: Option<f64>,
        /// The largest context this choice keeps its trunk and cache at on this machine
        /// (`k3_plan::default_context`); `None` when none fits.
        #[ts(type = "number | null")]
        default_context: Option<u64>,
        /// The most conversations this choice has memory for at once at the previews' context,
        /// each with its state and KV cache (`k3_plan::batch_fit`: what `k3 serve --batch` may
        /// decode together); `None` when the choice is refused.
        #[ts(type = "number | null")]
        largest_batch: Option<u64>,
    }
}

wire_struct! {
    /// What Settings › Memory shows.
    pub struct MemoryView both ways k3_app::memory::preview::MemoryView {
        /// The choice in force.
        current: MemoryChoice,
        /// How the plan in force places the trunk's layers.
        placement: Placement,
        /// How the presets' previews place them (the one asked about).
        preview_placement: Placement,
        /// Why layers cannot be placed by measured cost here (then only the prefix is offered).
        cost_placement_note: Option<String>,
        /// `None` when the model keeps every weight resident (the plan cannot change).
        current_plan: Option<PlanPreview>,
        presets: Vec<PlanPreview>,
        /// Whether unpinned trunk layers can stream (a packed trunk is in use).
        streamed_trunk: bool,
        /// Smallest trunk budget (one ring slot of the largest layer, or of the largest piece
        /// when layers can stream in pieces) and cache budget.
        #[ts(type = "number")]
        min_trunk_bytes: u64,
        #[ts(type = "number")]
        min_cache_bytes: u64,
        #[ts(type = "number")]
        whole_trunk_bytes: u64,
        /// Why no forecast is shown, when none is.
        forecast_note: Option<String>,
        /// Positions each conversation's KV cache is reserved for, in force.
        context_length: u32,
        /// The previews' context length (the one asked about).
        preview_context_length: u32,
        max_context_length: u32,
        /// RAM one position of context costs (the MLA cache of every MLA layer).
        #[ts(type = "number")]
        kv_bytes_per_position: u64,
        /// What the page's planner (k3_plan in WebAssembly) needs to plan any choice as the user
        /// drags a budget: sent once with this view.
        planner: PlannerInputs,
    }
}

wire_struct! {
    /// The footprint, machine and rates the page plans from (plan-wasm's JSON shapes).
    pub struct PlannerInputs both ways k3_app::memory::preview::PlannerInputs {
        #[ts(type = "import(\"../plan/wasmPlanner\").Footprint")]
        footprint: FootprintJson,
        /// MemAvailable with this model's current plan given back (what a new plan may take).
        #[ts(type = "import(\"../plan/wasmPlanner\").MachineMemory")]
        machine: MachineJson,
        streamed_trunk: bool,
        io_threads: u32,
        /// Headroom below this is "tight" (the `auto` reserve, `k3_plan::auto_headroom`).
        #[ts(type = "number")]
        reserve_bytes: u64,
        /// `None` until the drive's speed test ran (then no forecast).
        #[ts(type = "import(\"../plan/wasmPlanner\").Rates | null")]
        rates: Option<RatesJson>,
    }
}

/// Progress of an apply: trunk layers being pinned (0 of 0 while it waits for the reply
/// in progress, or when nothing more is pinned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ReplanProgressEvent {
    pub layers_done: u32,
    pub layers_total: u32,
}

/// What an apply returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct MemoryApplied {
    pub model: ModelInfo,
    pub view: MemoryView,
    /// Milliseconds from the call to the new plan in force (waiting for a reply included).
    #[ts(type = "number")]
    pub took_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::twin::FromWire;

    #[test]
    fn a_preset_choice_is_read_by_name_and_an_unknown_name_is_refused() {
        let parsed: MemoryChoice = serde_json::from_str(r#"{"kind":"preset","name":"server"}"#).unwrap();
        assert_eq!(k3_app::memory::MemoryChoice::from_wire(parsed).name(), "server");
        assert!(serde_json::from_str::<MemoryChoice>(r#"{"kind":"preset","name":"tiny"}"#).is_err());
    }
}
