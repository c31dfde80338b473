//! The dashboards' wire types: memory parts, the system's memory, activity, I/O, the disk
//! (twins of `k3_app::dashboard`').

use crate::ipc::twin::{wire_struct, wire_tagged};

wire_struct! {
    /// One volume and our files on it.
    pub struct DriveUsage from k3_app::dashboard::disk::DriveUsage {
        mount: String,
        fs: String,
        /// `ssd`, `hdd`, `virtual` or `unknown`.
        kind: String,
        #[ts(type = "number")]
        total_bytes: u64,
        #[ts(type = "number")]
        free_bytes: u64,
        /// What of ours lives here: model store, trunk, partial downloads, app data.
        parts: Vec<UsagePart>,
    }
}

wire_struct! {
    /// Bytes of one of our folders.
    pub struct UsagePart from k3_app::dashboard::disk::UsagePart {
        /// `store`, `trunk`, `partial` or `appData`.
        key: String,
        path: String,
        #[ts(type = "number")]
        bytes: u64,
    }
}

wire_struct! {
    /// One reading for the dashboards.
    pub struct Dashboard from k3_app::dashboard::Dashboard {
        /// Wall-clock time of the reading, in seconds since the Unix epoch (the charts' x).
        at_seconds: f64,
        activity: ActivityView,
        #[ts(type = "number | null")]
        rss_bytes: Option<u64>,
        #[ts(type = "number | null")]
        peak_rss_bytes: Option<u64>,
        /// The plan's total (trunk + cache budgets as planned + fixed overhead); `None` when
        /// every weight is resident.
        #[ts(type = "number | null")]
        plan_bytes: Option<u64>,
        /// Where the plan's bytes go, largest parts first as the plan lists them.
        breakdown: Vec<MemoryPart>,
        pinned_layers: u32,
        layers: u32,
        system: SystemMemory,
        /// Bytes read from disk since the model was loaded (the page differentiates them).
        #[ts(type = "number")]
        trunk_bytes_read: u64,
        #[ts(type = "number")]
        expert_bytes_read: u64,
        #[ts(type = "number | null")]
        reads_in_flight: Option<u64>,
        /// Tokens after the `after` the page asked with, oldest first.
        tokens: Vec<TokenPoint>,
        /// Ask with this next time.
        #[ts(type = "number")]
        last_seq: u64,
        pressure: Option<PressureWarning>,
    }
}

wire_tagged! {
    /// What the engine is doing.
    #[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
    pub enum ActivityView from k3_app::dashboard::ActivityView {
        Idle,
        Opening { layers_done: u32, layers_total: u32 },
        Generating { tokens: u32 },
        Replanning { layers_done: u32, layers_total: u32 },
    }

}

wire_struct! {
    /// One part of the memory plan.
    pub struct MemoryPart from k3_app::dashboard::MemoryPart {
        /// Stable key for colours and tests: pinned, ring, experts, io, embed, state, kv, scratch.
        key: String,
        label: String,
        #[ts(type = "number")]
        bytes: u64,
        detail: String,
    }
}

wire_struct! {
    /// The machine's memory and its pressure as the system measures it.
    pub struct SystemMemory from k3_app::dashboard::SystemMemory {
        #[ts(type = "number")]
        total_bytes: u64,
        #[ts(type = "number")]
        available_bytes: u64,
        /// PSI `some avg10` in percent; `None` where the kernel has no PSI (macOS, Windows).
        pressure_avg10: Option<f64>,
        /// The system's own pressure reading in words (PSI, macOS's level, Windows' commit
        /// charge); `None` where it says nothing.
        pressure: Option<String>,
        /// The system says memory is short (`MemoryPressure::is_high`).
        pressure_high: bool,
    }
}

wire_struct! {
    /// One generated token on the timeline.
    pub struct TokenPoint from k3_app::dashboard::TokenPoint {
        #[ts(type = "number")]
        seq: u64,
        #[ts(type = "number")]
        job: u64,
        index: u32,
        /// Index 0 carries the prompt's prefill: shown apart.
        prefill: bool,
        wall_ms: f64,
        trunk_wait_ms: f64,
        expert_wait_ms: f64,
        /// Wall − (trunk wait + expert wait).
        compute_ms: f64,
        #[ts(type = "number")]
        trunk_bytes: u64,
        #[ts(type = "number")]
        expert_bytes: u64,
        #[ts(type = "number")]
        expert_requests: u64,
        #[ts(type = "number")]
        true_hits: u64,
        #[ts(type = "number")]
        prefetch_hits: u64,
        #[ts(type = "number")]
        misses: u64,
    }
}

wire_struct! {
    /// What the window shows when memory runs short.
    pub struct PressureWarning from k3_app::dashboard::pressure::PressureWarning {
        #[ts(type = "number")]
        available_bytes: u64,
        /// Memory the plan may still take (plan − RSS).
        #[ts(type = "number")]
        plan_growth_bytes: u64,
        /// Available − growth (negative: short by that much).
        spare_bytes: f64,
        #[ts(type = "number")]
        min_spare_bytes: u64,
        /// PSI `some avg10` (Linux), when that is the system's measure.
        pressure_avg10: Option<f64>,
        /// The system's own pressure reading in words, when it is high.
        pressure: Option<String>,
        /// The largest preset that leaves enough spare memory, if any.
        step_down: Option<String>,
        #[ts(type = "number | null")]
        step_down_plan_bytes: Option<u64>,
    }
}
